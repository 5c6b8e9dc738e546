// The Memory tab's events table (`tb_memory_events`): each allocation with its free, the operator
// it happened in, its size and lifetime, as the plugin's Memory Events table. Times are ms since the
// device's first memory record, as the memory curve's axis. With a time range (t0us/t1us, from a
// timeline selection) only the events alive in it are listed.
import { bytes, count, el, num, us } from "./common.js";
import { tableView } from "./views_table.js";

const ms = (t, t0) => (t === null || t === undefined ? null : (t - t0) / 1000);
const at = (v) => (v === null ? "–" : num(v));

export function memoryEventsSection(v, device, { section, state, changed, t0us, t1us }) {
  const all = (v.tb_memory_events || { events: [], total: 0 });
  let rows = all.events.filter((e) => e.device === device);
  if (!rows.length) return null;
  const first = Math.min(...rows.map((e) => (e.alloc_us ?? e.free_us)));
  let note = `${count(all.total)} allocations in the trace${all.total > all.events.length ? `, the ${count(all.events.length)} largest listed` : ""}; times in ms since the first record.`;
  if (t0us && t1us) {
    const lo = Number(t0us);
    const hi = Number(t1us);
    rows = rows.filter((e) => (e.alloc_us ?? -Infinity) < hi && (e.free_us ?? Infinity) >= lo);
    note = `${count(rows.length)} allocations alive in the timeline's range (${us(hi - lo)}). ` + note;
  }
  const columns = [
    { key: "operator", label: "operator", get: (e) => e.operator || "–", value: (e) => e.operator || "" },
    { key: "size_bytes", label: "size", num: true, get: (e) => bytes(e.size_bytes), value: (e) => e.size_bytes },
    { key: "alloc", label: "allocated at", num: true, get: (e) => at(ms(e.alloc_us, first)), value: (e) => ms(e.alloc_us, first) },
    { key: "free", label: "freed at", num: true, get: (e) => at(ms(e.free_us, first)), value: (e) => ms(e.free_us, first) },
    { key: "duration_us", label: "lifetime", num: true, get: (e) => (e.duration_us === null ? "not freed" : us(e.duration_us)), value: (e) => e.duration_us },
  ];
  return section(
    "vw-mem-events",
    `Memory events (${device})`,
    tableView(columns, rows, { defaultSort: "size_bytes", searchLabel: "Operator", state, changed }),
    note,
  );
}
