// The Profile page's Memory tab: per device, the memory curve (allocated and reserved over time),
// the operators' memory figures (`tb_memory`), and the allocation/free events (`tb_memory_events`),
// as the plugin's Memory view. Dragging across the curve (or typing a range under it) picks a time
// range: the curve zooms to it, the events table keeps the allocations alive in it, and a table of
// what each operator allocated and freed inside it appears. The range is the page's t0us/t1us, the
// same one a timeline selection opens, so the Operators tab shows the calls in it too. Times are ms
// since the device's first memory record.
import { dataTable, lineChart, panel } from "./charts.js";
import { bytes, count, el, num, us } from "./common.js";
import { tableView } from "./views_table.js";

const round = (ms) => Math.round(ms * 1000) / 1000;
/** A numeric column of a row's figure, shown by `format`, sorted by its value. */
const figure = (key, label, format) => ({ key, label, num: true, get: (r) => format(r[key]), value: (r) => r[key] });
const at = (v) => (v === null || v === undefined ? "–" : num(v));

/**
 * The tab. `ctx`: the page's {view (its state), section, cut, timelineHref, mainTable (the tab's
 * table, sorted and searched through the URL), setRange(t0us, t1us) (null, null: the whole trace),
 * redraw()}.
 */
export function memoryTab(v, ctx) {
  const { view, section } = ctx;
  const rows = v.tb_memory || [];
  if (!rows.length) {
    return [section("vw-memory", "Memory", el("p", { class: "empty" }, "No memory records in this trace: profile with profile_memory=True (the SDK's \"full\" preset) to see them."))];
  }
  const devices = [...new Set(rows.map((r) => r.device))];
  const device = devices.includes(view.device) ? view.device : devices[0];
  const picker = el("select", { "aria-label": "device", id: "vw-device" }, devices.map((d) => el("option", { value: d, selected: d === device }, d)));
  picker.addEventListener("change", () => {
    view.device = picker.value;
    ctx.redraw();
  });
  const curve = (v.tb_memory_curve || []).find((c) => c.device === device);
  const events = (v.tb_memory_events || { events: [], total: 0 });
  const deviceEvents = events.events.filter((e) => e.device === device);
  const first = curve && curve.t_us.length ? curve.t_us[0] : Math.min(...deviceEvents.map((e) => e.alloc_us ?? e.free_us));
  const range = view.t0us && view.t1us ? [Number(view.t0us), Number(view.t1us)] : null;
  return [
    curve && curve.t_us.length > 1 ? curvePanel(curve, device, first, range, ctx) : null,
    range ? rangeByOperator(deviceEvents, events, device, first, range, ctx) : null,
    section(
      "vw-memory",
      `Memory by operator (${device}, whole trace)`,
      el("div", {}, el("div", { class: "table-tools" }, el("label", {}, "Device ", picker)), ctx.mainTable(operatorColumns(ctx), rows.filter((r) => r.device === device), { defaultSort: "size_increase_bytes", searchLabel: "Operator" })),
      "Allocations and frees recorded inside each operator's calls (self) and inside everything they called.",
    ),
    eventsSection(deviceEvents, events, device, first, range, ctx),
  ];
}

function operatorColumns({ cut, timelineHref }) {
  return [
    { key: "name", label: "operator", get: (r) => cut(r.name, timelineHref(r.name)), value: (r) => r.name },
    figure("calls", "calls", count),
    figure("size_increase_bytes", "size increase", bytes),
    figure("self_size_increase_bytes", "self size increase", bytes),
    figure("allocation_count", "allocations", count),
    figure("self_allocation_count", "self allocations", count),
    figure("allocation_size_bytes", "allocation size", bytes),
    figure("self_allocation_size_bytes", "self allocation size", bytes),
  ];
}

/** The curve, zoomed to the range when there is one; a drag across it picks a new range. */
function curvePanel(curve, device, first, range, ctx) {
  const x = curve.t_us.map((t) => (t - first) / 1000);
  const hasReserved = curve.reserved_bytes.some((b) => b !== null && b > 0);
  const toUs = (ms) => Math.round(first + ms * 1000);
  const zoom = range ? [(range[0] - first) / 1000, (range[1] - first) / 1000] : null;
  const from = el("input", { type: "number", step: "any", id: "vw-mem-from", "aria-label": "range start, ms", value: zoom ? String(round(zoom[0])) : "" });
  const to = el("input", { type: "number", step: "any", id: "vw-mem-to", "aria-label": "range end, ms", value: zoom ? String(round(zoom[1])) : "" });
  const apply = el("button", { type: "button", id: "vw-mem-apply" }, "Select");
  const form = el("form", { class: "range-form", id: "vw-mem-range-form" }, el("label", {}, "Range from ", from), el("label", {}, " to ", to, " ms "), apply);
  form.addEventListener("submit", (e) => e.preventDefault());
  apply.addEventListener("click", () => {
    const a = Number(from.value);
    const b = Number(to.value);
    if (from.value !== "" && to.value !== "" && b > a) ctx.setRange(toUs(a), toUs(b));
  });
  return panel({
    id: "vw-mem-curve",
    title: `Memory over time (${device}): peak ${bytes(curve.peak_allocated_bytes)} allocated`,
    note: `${count(curve.records)} allocation and free records; each point is the largest total of its time slice, so peaks show. Drag across the chart to select a range: the tables below follow it.`,
    wide: true,
    tools: [form],
    draw: (n) =>
      lineChart(n, {
        x,
        series: [
          { label: "allocated", values: curve.allocated_bytes, colorIndex: 0 },
          ...(hasReserved ? [{ label: "reserved", values: curve.reserved_bytes, colorIndex: 1 }] : []),
        ],
        xLabel: "ms since the first record",
        yLabel: "bytes",
        xFormat: (v) => num(v),
        yFormat: (v) => bytes(v),
        xRange: zoom,
        onSelect: (a, b) => ctx.setRange(toUs(a), toUs(b)),
      }),
    table: () =>
      dataTable(
        [
          { label: "ms", num: true, get: (i) => num(x[i]) },
          { label: "allocated", num: true, get: (i) => bytes(curve.allocated_bytes[i]) },
          { label: "reserved", num: true, get: (i) => bytes(curve.reserved_bytes[i]) },
        ],
        x.map((_, i) => i).filter((i) => !zoom || (x[i] >= zoom[0] && x[i] <= zoom[1])),
      ),
  });
}

/** Within the range: per operator, the allocations and frees recorded in it (from the events). */
function rangeByOperator(deviceEvents, events, device, first, [lo, hi], { section, view, setRange }) {
  const inside = (t) => t !== null && t !== undefined && t >= lo && t < hi;
  const byOp = new Map();
  const row = (name) => byOp.get(name) || byOp.set(name, { name, allocations: 0, allocated_bytes: 0, frees: 0, freed_bytes: 0 }).get(name);
  for (const e of deviceEvents) {
    const name = e.operator || "(no operator)";
    if (inside(e.alloc_us)) {
      const r = row(name);
      r.allocations += 1;
      r.allocated_bytes += e.size_bytes;
    }
    if (inside(e.free_us)) {
      const r = row(name);
      r.frees += 1;
      r.freed_bytes += e.size_bytes;
    }
  }
  const rows = [...byOp.values()].map((r) => ({ ...r, net_bytes: r.allocated_bytes - r.freed_bytes }));
  const columns = [
    { key: "name", label: "operator", get: (r) => r.name, value: (r) => r.name },
    figure("allocations", "allocations", count),
    figure("allocated_bytes", "allocated", bytes),
    figure("frees", "frees", count),
    figure("freed_bytes", "freed", bytes),
    figure("net_bytes", "net change", bytes),
  ];
  const whole = el("button", { type: "button", id: "vw-mem-clear" }, "Show the whole trace");
  whole.addEventListener("click", () => setRange(null, null));
  const partial = events.total > events.events.length ? ` Only the ${count(events.events.length)} largest of the trace's ${count(events.total)} allocations are kept, so small ones are missing here.` : "";
  return section(
    "vw-mem-range",
    `In the range ${at((lo - first) / 1000)}–${at((hi - first) / 1000)} ms (${us(hi - lo)}, ${device})`,
    el("div", {}, el("p", { class: "vw-range", role: "status" }, `${count(rows.reduce((s, r) => s + r.allocations, 0))} allocations and ${count(rows.reduce((s, r) => s + r.frees, 0))} frees in the range.`, " ", whole), tableView(columns, rows, { defaultSort: "allocated_bytes", searchLabel: "Operator in the range", state: view.rangeTable, changed: () => {} })),
    `What each operator allocated and freed between the range's ends.${partial}`,
  );
}

/** The plugin's memory events table: each allocation with its free, its operator, size and lifetime. */
function eventsSection(deviceEvents, events, device, first, range, { section, view }) {
  if (!deviceEvents.length) return null;
  const ms = (t) => (t === null || t === undefined ? null : (t - first) / 1000);
  let rows = deviceEvents;
  let note = `${count(events.total)} allocations in the trace${events.total > events.events.length ? `, the ${count(events.events.length)} largest listed` : ""}; times in ms since the first record.`;
  if (range) {
    const [lo, hi] = range;
    rows = rows.filter((e) => (e.alloc_us ?? -Infinity) < hi && (e.free_us ?? Infinity) >= lo);
    note = `${count(rows.length)} allocations alive in the range (${us(hi - lo)}). ` + note;
  }
  const columns = [
    { key: "operator", label: "operator", get: (e) => e.operator || "–", value: (e) => e.operator || "" },
    { key: "size_bytes", label: "size", num: true, get: (e) => bytes(e.size_bytes), value: (e) => e.size_bytes },
    { key: "alloc", label: "allocated at", num: true, get: (e) => at(ms(e.alloc_us)), value: (e) => ms(e.alloc_us) },
    { key: "free", label: "freed at", num: true, get: (e) => at(ms(e.free_us)), value: (e) => ms(e.free_us) },
    { key: "duration_us", label: "lifetime", num: true, get: (e) => (e.duration_us === null ? "not freed" : us(e.duration_us)), value: (e) => e.duration_us },
  ];
  return section(
    "vw-mem-events",
    `Memory events (${device})`,
    tableView(columns, rows, { defaultSort: "size_bytes", searchLabel: "Operator", state: view.events, changed: () => {} }),
    note,
  );
}
