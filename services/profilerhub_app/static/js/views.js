// The profile views of one trace: what PyTorch's TensorBoard profiler plugin showed (Overview,
// Operators, Kernels, Memory, Modules, Distributed), from `GET api/jobs/{id}/views?trace=N` (computed once at ingest
// by the analysis engine; this module only draws and sorts). The URL keeps trace, tab, grouping,
// search and sort, so a view can be linked. An operator's name opens its calls in the timeline.
// Only the Memory tab draws a chart (uPlot): its module is loaded when that tab is first shown
// (or once the page is idle), so the other tabs open without fetching or compiling uPlot.
import { barList, dataTable, panel, stackBar } from "./blocks.js";
import { api, base, bytes, count, el, errorBox, fill, jobId, num, pct, query, setQuery, us } from "./common.js";
import { modulesTab } from "./views_modules.js";
import { tableView as sharedTable } from "./views_table.js";

const TABS = ["overview", "operators", "kernels", "memory", "modules", "distributed"];
const node = document.getElementById("vw-panel");
const title = document.getElementById("job-title");
const tracePicker = document.getElementById("vw-trace");
const tabs = [...document.querySelectorAll("#vw-tabs [role=tab]")];
const jobLink = document.getElementById("vw-job");
const timelineLink = document.getElementById("vw-timeline");
const jobPath = `jobs/${encodeURIComponent(jobId)}`;

const initial = query();
const view = {
  trace: Number(initial.trace) || 0,
  tab: TABS.includes(initial.tab) ? initial.tab : "overview",
  group: initial.group || "",
  q: initial.q || "",
  sort: initial.sort || "",
  desc: initial.asc !== "1",
  device: initial.device || "",
  t0us: initial.t0us || "",
  t1us: initial.t1us || "",
  range: null, // the Operators view over [t0us, t1us) once it is fetched
  events: { q: "", sort: "", desc: true }, // the memory events table's own sort and search
  rangeTable: { q: "", sort: "", desc: true }, // the memory-in-a-range table's
  data: null,
};

const ROLES = [
  ["kernel_us", "Kernel"],
  ["memcpy_us", "Memcpy"],
  ["memset_us", "Memset"],
  ["communication_us", "Communication"],
  ["runtime_us", "Runtime"],
  ["dataloader_us", "DataLoader"],
  ["cpu_exec_us", "CPU Exec"],
  ["other_us", "Other"],
];

const yesNo = (v) => (v ? "yes" : "no");
/** A long name cut to one line (the whole of it in the tooltip and in the search). */
const cut = (text, href) => el(href ? "a" : "span", { class: "cut", href, title: text }, text);
const shape = (v) => (v === null || v === undefined ? "–" : JSON.stringify(v));
const timelineHref = (q) => `${base}${jobPath}/timeline?${new URLSearchParams({ trace: String(view.trace), q })}`;

function remember() {
  setQuery({
    trace: view.trace || null,
    tab: view.tab === "overview" ? null : view.tab,
    group: view.group || null,
    q: view.q || null,
    sort: view.sort || null,
    asc: view.desc ? null : "1",
    device: view.device || null,
    t0us: view.t0us || null,
    t1us: view.t1us || null,
  });
}

/** The tab's main table: its sort and search are the page's (kept in the URL). */
const tableView = (columns, rows, options) => sharedTable(columns, rows, { ...options, state: view, changed: remember });

function groupPicker(options) {
  const select = el(
    "select",
    { "aria-label": "group rows by", id: "vw-group" },
    options.map(([value, label]) => el("option", { value, selected: value === view.group }, label)),
  );
  select.addEventListener("change", () => {
    view.group = select.value;
    view.sort = "";
    remember();
    draw();
  });
  return el("label", {}, "Group by ", select);
}

function section(id, heading, content, note) {
  return el(
    "section",
    { class: "panel wide", id, "aria-labelledby": `${id}-title` },
    el("div", { class: "panel-head" }, el("h2", { id: `${id}-title` }, heading)),
    note ? el("p", { class: "note" }, note) : null,
    content,
  );
}

/** Where each recommendation's figures are: a tab of this page, or the timeline searching for them. */
const EVIDENCE = {
  DataLoaderTime: { tab: "overview", target: "#vw-steps", text: "DataLoader time by step" },
  CommunicationTime: { tab: "distributed", text: "Communication by rank" },
  TensorCoresUnused: { tab: "kernels", text: "Kernels and their tensor-core use" },
  DataParallelUsed: { query: "DataParallel", text: "DataParallel's calls in the timeline" },
  NcclBackendUnused: { tab: "distributed", text: "The collectives" },
  MemoryNearLimit: { tab: "memory", text: "Memory over time" },
};

function evidence(rule) {
  const to = EVIDENCE[rule];
  if (!to) return null;
  if (to.query) return el("a", { class: "evidence", href: timelineHref(to.query) }, `${to.text} →`);
  const link = el("a", { class: "evidence", href: to.target || `?${new URLSearchParams({ trace: String(view.trace), tab: to.tab })}` }, `${to.text} →`);
  if (to.tab !== view.tab) {
    link.addEventListener("click", (e) => {
      e.preventDefault();
      pickTab(to.tab, true);
    });
  }
  return link;
}

function overviewTab(v) {
  const o = v.tb_overview;
  if (!o) return [section("vw-overview", "Overview", el("p", { class: "empty" }, "This trace has no step, operator or python event: the step window is undefined."))];
  const avg = o.average;
  const parts = ROLES.map(([k, label], i) => ({ label, value: avg[k], text: `${us(avg[k])} (${pct((100 * avg[k]) / (avg.total_us || 1))})`, colorIndex: i }));
  const maxTotal = Math.max(...o.steps.map((s) => s.total_us), 1);
  const rows = el("div", { class: "steps-rows", role: "list" });
  for (const s of o.steps) {
    const bar = el("div", {});
    stackBar(bar, ROLES.map(([k, label], i) => ({ label, value: s[k], text: us(s[k]), colorIndex: i })));
    const stack = bar.querySelector(".stack");
    const legend = bar.querySelector(".legend");
    legend?.remove();
    if (stack) stack.style.width = `${(100 * s.total_us) / maxTotal}%`;
    rows.append(el("span", { class: "label", role: "listitem" }, `step ${s.step}`), bar, el("span", { class: "value" }, us(s.total_us)));
  }
  const stepTable = () =>
    dataTable(
      [{ label: "step", get: (s) => s.step }, ...ROLES.map(([k, label]) => ({ label, num: true, get: (s) => us(s[k]) })), { label: "total", num: true, get: (s) => us(s.total_us) }],
      o.steps,
    );
  const gpus = v.tb_gpu_summary || [];
  const advice = view.data.recommendations || [];
  const out = [
    section(
      "vw-advice",
      "Recommendations",
      advice.length
        ? el("ul", { class: "advice" }, advice.map((r) => el("li", { "data-rule": r.rule }, el("b", {}, r.message), ". ", r.recommendation, " ", evidence(r.rule))))
        : el("p", { class: "empty" }, "None: the DataLoader, communication, tensor-core, DataParallel, NCCL and memory checks found nothing."),
      "TensorBoard's plugin's checks at its thresholds; as rules (DataLoaderTime, CommunicationTime, TensorCoresUnused, DataParallelUsed, NcclBackendUnused, MemoryNearLimit) a job can run them too; each links to its figures.",
    ),
    panel({
      id: "vw-average",
      title: `Step time by role (mean of ${count(o.kept_steps)} step${o.kept_steps === 1 ? "" : "s"}: ${us(avg.total_us)})`,
      note: "Each role takes only the step time the roles before it left (Kernel first), as TensorBoard's plugin counted it; Other is what is left.",
      wide: true,
      draw: (n) => stackBar(n, parts),
      table: () => dataTable([{ label: "role", get: (p) => p.label }, { label: "time", num: true, get: (p) => p.text }], parts),
    }),
    panel({ id: "vw-steps", title: "Per step", wide: true, draw: (n) => fill(n, rows), table: stepTable }),
  ];
  if (gpus.length) {
    out.push(
      panel({
        id: "vw-gpu",
        title: "GPU summary",
        note: "Over the steps' window: utilization = kernel busy time; SM efficiency and occupancy are CUPTI's estimates; tensor cores = share of operators' kernel time.",
        wide: true,
        draw: (n) =>
          fill(
            n,
            gpus.map((g) =>
              el(
                "div",
                { class: "kpis" },
                el("div", {}, el("span", {}, "device"), el("b", {}, `GPU ${g.device}`)),
                el("div", {}, el("span", {}, "utilization"), el("b", { class: "big" }, pct(g.gpu_utilization_pct))),
                el("div", {}, el("span", {}, "est. SM efficiency"), el("b", { class: "big" }, pct(g.sm_efficiency_pct))),
                el("div", {}, el("span", {}, "est. achieved occupancy"), el("b", { class: "big" }, pct(g.achieved_occupancy_pct))),
                el("div", {}, el("span", {}, "tensor-core kernel time"), el("b", { class: "big" }, pct(g.tensor_core_kernel_pct))),
              ),
            ),
          ),
        table: () =>
          dataTable(
            [
              { label: "device", get: (g) => g.device },
              { label: "utilization", num: true, get: (g) => pct(g.gpu_utilization_pct) },
              { label: "SM efficiency", num: true, get: (g) => pct(g.sm_efficiency_pct) },
              { label: "occupancy", num: true, get: (g) => pct(g.achieved_occupancy_pct) },
              { label: "tensor cores", num: true, get: (g) => pct(g.tensor_core_kernel_pct) },
            ],
            gpus,
          ),
      }),
    );
  }
  return out;
}

/** Pick a time range (from the memory curve; null, null: the whole trace): every tab follows it. */
function setRange(t0us, t1us) {
  view.t0us = t0us === null ? "" : String(t0us);
  view.t1us = t1us === null ? "" : String(t1us);
  view.range = null;
  remember();
  draw();
}

/** A time range from the timeline (t0us/t1us): the calls starting in it, with the way back. */
function rangeNote() {
  if (!view.t0us) return null;
  const whole = el("button", { type: "button", id: "vw-range-clear" }, "Show the whole trace");
  whole.addEventListener("click", () => setRange(null, null));
  const r = view.range;
  const span = Number(view.t1us) - Number(view.t0us);
  const text = r ? `Operators called in a ${us(span)} range: ${count(r.calls)} calls.` : "Reading the operators of the range…";
  return el("p", { class: "vw-range", id: "vw-range", role: "status" }, text, " ", el("a", { href: timelineHref("") + `&t0us=${view.t0us}&t1us=${view.t1us}` }, "Back to the range"), " ", whole);
}

async function loadRange() {
  const wanted = `${view.trace}:${view.t0us}:${view.t1us}`;
  try {
    const r = await api(`${jobPath}/views/operators?${new URLSearchParams({ trace: String(view.trace), t0us: view.t0us, t1us: view.t1us })}`);
    if (wanted !== `${view.trace}:${view.t0us}:${view.t1us}`) return;
    view.range = r;
    draw();
  } catch (error) {
    fill(node, errorBox(error));
  }
}

function operatorsTab(v) {
  const byShape = view.group === "shape";
  if (view.t0us && !view.range) {
    loadRange();
    return [rangeNote()];
  }
  const source = view.t0us ? view.range : v;
  const rows = (byShape ? source.tb_operators_by_shape : source.tb_operators) || [];
  const nameCell = (r) => cut(r.name, timelineHref(r.name));
  const columns = [
    { key: "name", label: "operator", get: nameCell, value: (r) => r.name },
    ...(byShape ? [{ key: "input_shape", label: "input shape", get: (r) => el("span", { class: "shape" }, shape(r.input_shape)), value: (r) => shape(r.input_shape) }] : []),
    { key: "calls", label: "calls", num: true, get: (r) => count(r.calls), value: (r) => r.calls },
    { key: "device_self_us", label: "device self", num: true, get: (r) => us(r.device_self_us), value: (r) => r.device_self_us },
    { key: "device_total_us", label: "device total", num: true, get: (r) => us(r.device_total_us), value: (r) => r.device_total_us },
    { key: "host_self_us", label: "host self", num: true, get: (r) => us(r.host_self_us), value: (r) => r.host_self_us },
    { key: "host_total_us", label: "host total", num: true, get: (r) => us(r.host_total_us), value: (r) => r.host_total_us },
    { key: "tc_eligible", label: "tensor-core eligible", get: (r) => yesNo(r.tc_eligible), value: (r) => yesNo(r.tc_eligible) },
  ];
  const anyDevice = rows.some((r) => r.device_self_us > 0);
  const table = tableView(columns, rows, { defaultSort: anyDevice ? "device_self_us" : "host_self_us", searchLabel: "Operator" });
  const top = rows
    .slice()
    .sort((a, b) => (anyDevice ? b.device_self_us - a.device_self_us : b.host_self_us - a.host_self_us))
    .slice(0, 10);
  return [
    panel({
      id: "vw-top-ops",
      title: `Top operators by ${anyDevice ? "device" : "host"} self time`,
      wide: true,
      draw: (n) => barList(n, top.map((r, i) => ({ label: byShape ? `${r.name} ${shape(r.input_shape)}` : r.name, value: anyDevice ? r.device_self_us : r.host_self_us, text: us(anyDevice ? r.device_self_us : r.host_self_us), href: timelineHref(r.name), colorIndex: i % 8 }))),
      table: () => dataTable([{ label: "operator", get: (r) => r.name }, { label: "self time", num: true, get: (r) => us(anyDevice ? r.device_self_us : r.host_self_us) }], top),
    }),
    section("vw-ops", "Operators", el("div", {}, rangeNote(), el("div", { class: "table-tools" }, groupPicker([["", "operator"], ["shape", "operator + input shape"]])), table)),
  ];
}

function kernelsTab(v) {
  const byOp = view.group === "op";
  const rows = (byOp ? v.tb_kernels_by_op : v.tb_kernels) || [];
  if (!(v.tb_kernels || []).length) return [section("vw-kernels", "Kernels", el("p", { class: "empty" }, "No GPU kernel in this trace (a CPU-only profile)."))];
  const columns = [
    { key: "name", label: "kernel", get: (r) => cut(r.name, timelineHref(r.name)), value: (r) => r.name },
    ...(byOp
      ? [
          { key: "operator", label: "operator", get: (r) => cut(r.operator), value: (r) => r.operator },
          { key: "grid", label: "grid", get: (r) => shape(r.grid), value: (r) => shape(r.grid) },
          { key: "block", label: "block", get: (r) => shape(r.block), value: (r) => shape(r.block) },
          { key: "registers_per_thread", label: "registers", num: true, get: (r) => count(r.registers_per_thread), value: (r) => r.registers_per_thread },
          { key: "shared_memory", label: "shared memory", num: true, get: (r) => bytes(r.shared_memory), value: (r) => r.shared_memory },
        ]
      : []),
    { key: "calls", label: "calls", num: true, get: (r) => count(r.calls), value: (r) => r.calls },
    { key: "total_us", label: "total", num: true, get: (r) => us(r.total_us), value: (r) => r.total_us },
    { key: "mean_us", label: "mean", num: true, get: (r) => us(r.mean_us), value: (r) => r.mean_us },
    { key: "max_us", label: "max", num: true, get: (r) => us(r.max_us), value: (r) => r.max_us },
    { key: "min_us", label: "min", num: true, get: (r) => us(r.min_us), value: (r) => r.min_us },
    { key: "blocks_per_sm", label: "mean blocks/SM", num: true, get: (r) => num(r.blocks_per_sm), value: (r) => r.blocks_per_sm },
    { key: "occupancy_pct", label: "mean est. occupancy", num: true, get: (r) => pct(r.occupancy_pct), value: (r) => r.occupancy_pct },
    { key: "tensor_cores", label: "tensor cores", get: (r) => yesNo(r.tensor_cores), value: (r) => yesNo(r.tensor_cores) },
  ];
  const all = v.tb_kernels;
  const tc = all.filter((k) => k.tensor_cores).reduce((s, k) => s + k.total_us, 0);
  const total = all.reduce((s, k) => s + k.total_us, 0);
  const tcParts = [
    { label: "tensor cores used", value: tc, text: `${us(tc)} (${pct((100 * tc) / (total || 1))})`, colorIndex: 2 },
    { label: "not used", value: total - tc, text: `${us(total - tc)} (${pct((100 * (total - tc)) / (total || 1))})`, colorIndex: 6 },
  ];
  const top = all.slice(0, 10);
  return [
    panel({
      id: "vw-top-kernels",
      title: "Kernel time by kernel",
      draw: (n) => barList(n, top.map((k, i) => ({ label: k.name, value: k.total_us, text: us(k.total_us), title: k.name, colorIndex: i % 8 }))),
      table: () => dataTable([{ label: "kernel", get: (k) => k.name }, { label: "total", num: true, get: (k) => us(k.total_us) }], top),
    }),
    panel({
      id: "vw-tc",
      title: "Kernel time by tensor-core use",
      draw: (n) => stackBar(n, tcParts),
      table: () => dataTable([{ label: "kernels", get: (p) => p.label }, { label: "time", num: true, get: (p) => p.text }], tcParts),
    }),
    section("vw-kernels", "Kernels", el("div", {}, el("div", { class: "table-tools" }, groupPicker([["", "kernel"], ["op", "kernel + operator"]])), tableView(columns, rows, { defaultSort: "total_us", searchLabel: "Kernel" }))),
  ];
}

const SPLIT = [
  ["computation_us", "computation"],
  ["overlap_us", "overlapped"],
  ["communication_us", "communication"],
  ["other_us", "other"],
];

function splitBar(node, row) {
  // the plugin's four parts: computation and communication each without the overlap, the overlap, the rest
  const parts = [
    { label: "computation only", value: row.computation_us - row.overlap_us, text: us(row.computation_us - row.overlap_us), colorIndex: 0 },
    { label: "overlapped", value: row.overlap_us, text: us(row.overlap_us), colorIndex: 2 },
    { label: "communication only", value: row.communication_us - row.overlap_us, text: us(row.communication_us - row.overlap_us), colorIndex: 1 },
    { label: "other", value: row.other_us, text: us(row.other_us), colorIndex: 7 },
  ];
  return stackBar(node, parts);
}

function rankRow(r) {
  const bar = el("div", {});
  splitBar(bar, r);
  const label = r.label || (r.rank === null || r.rank === undefined ? r.file : `rank ${r.rank}`);
  return el("div", { class: "rank-split" }, el("span", { class: "label" }, label), bar);
}

function distributedTab(v) {
  const d = v.tb_distributed;
  const ranks = (view.data.ranks || []).filter((r) => r.computation_us !== undefined);
  const comm = d && (d.collectives.length || (d.average && d.average.communication_us > 0));
  if (!d || !comm) {
    return [section("vw-dist", "Distributed", el("p", { class: "empty" }, "No collective communication (nccl:/gloo: operations) in this trace."))];
  }
  const splitColumns = SPLIT.map(([k, label]) => ({ label, num: true, get: (r) => us(r[k]) }));
  return [
    panel({
      id: "vw-ranks",
      title: `Per rank (mean step, ${count(ranks.length)} rank${ranks.length === 1 ? "" : "s"})`,
      note: "Computation is kernel time (CPU time in a job without kernels); overlapped is communication hidden behind it; other is the rest of the step.",
      wide: true,
      draw: (n) => fill(n, ranks.map(rankRow)),
      table: () => dataTable([{ label: "rank", get: (r) => (r.rank ?? r.file) }, ...splitColumns], ranks),
    }),
    panel({
      id: "vw-dist-steps",
      title: "This trace, per step",
      wide: true,
      draw: (n) => fill(n, d.steps.map((r) => rankRow({ ...r, label: `step ${r.step}` }))),
      table: () => dataTable([{ label: "step", get: (r) => r.step }, ...splitColumns], d.steps),
    }),
    section(
      "vw-collectives",
      "Collective operations",
      tableView(
        [
          { key: "name", label: "operation", get: (r) => cut(r.name, timelineHref(r.name)), value: (r) => r.name },
          { key: "calls", label: "calls", num: true, get: (r) => count(r.calls), value: (r) => r.calls },
          { key: "bytes", label: "size", num: true, get: (r) => bytes(r.bytes), value: (r) => r.bytes },
          { key: "total_us", label: "time", num: true, get: (r) => us(r.total_us), value: (r) => r.total_us },
        ],
        d.collectives,
        { defaultSort: "total_us", searchLabel: "Operation" },
      ),
      "Size: the inputs' shapes times their element sizes; time: the operation's range with its kernels.",
    ),
  ];
}

/** The engine's notes on this trace, above the tables they concern. */
const notes = (v) => (v.tb_notes || []).map((n) => el("p", { class: "vw-note", role: "note" }, n));

// The Memory tab's module, and its imports preloaded beside it (not found one after the other).
const MEMORY_IMPORTS = ["./charts.js", "../vendor/uplot/uPlot.esm.js"];
let memoryModule = null;
let memoryTab = null; // views_memory.js's, once loaded
function loadMemoryTab() {
  if (!memoryModule) {
    for (const m of MEMORY_IMPORTS) document.head.append(el("link", { rel: "modulepreload", href: new URL(m, import.meta.url).href }));
    memoryModule = import("./views_memory.js").then((m) => (memoryTab = m.memoryTab));
    memoryModule.catch(() => (memoryModule = null)); // asked again on the next draw
  }
  return memoryModule;
}

const DRAW = {
  overview: overviewTab,
  operators: operatorsTab,
  kernels: kernelsTab,
  memory: (v) => memoryTab(v, { view, section, cut, timelineHref, mainTable: tableView, setRange, redraw: () => (remember(), draw()) }),
  modules: (v) => modulesTab(v, { section, timelineHref }),
  distributed: distributedTab,
};

function draw() {
  for (const t of tabs) {
    const on = t.dataset.tab === view.tab;
    t.setAttribute("aria-selected", String(on));
    t.tabIndex = on ? 0 : -1;
  }
  node.setAttribute("aria-labelledby", `tab-${view.tab}`);
  const v = view.data.views;
  if (view.tab === "memory" && !memoryTab) {
    const data = view.data;
    fill(node, el("p", { class: "muted" }, "Loading the memory view…")).setAttribute("aria-busy", "true");
    loadMemoryTab().then(
      () => view.tab === "memory" && view.data === data && draw(),
      (error) => view.tab === "memory" && fill(node, errorBox(error)),
    );
    return;
  }
  fill(node, view.tab === "operators" || view.tab === "kernels" ? notes(v) : null, DRAW[view.tab](v));
}

function pickTab(tab, focus = false) {
  if (tab === view.tab) return;
  view.tab = tab;
  view.group = "";
  view.q = "";
  view.sort = "";
  view.desc = true;
  remember();
  draw();
  if (focus) tabs.find((t) => t.dataset.tab === tab)?.focus();
}

tabs.forEach((t, i) => {
  t.addEventListener("click", () => pickTab(t.dataset.tab));
  t.addEventListener("keydown", (e) => {
    const step = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
    if (step) pickTab(tabs[(i + step + tabs.length) % tabs.length].dataset.tab, true);
  });
});

function showTracePicker(d) {
  if (d.traces.length < 2) return fill(tracePicker);
  const select = el(
    "select",
    { "aria-label": "trace", id: "vw-trace-select" },
    d.traces.map((t) => el("option", { value: t.index, selected: t.index === view.trace }, t.rank === null || t.rank === undefined ? t.file : `rank ${t.rank} · ${t.file}`)),
  );
  select.addEventListener("change", () => {
    view.trace = Number(select.value);
    view.range = null;
    remember();
    load();
  });
  return fill(tracePicker, el("label", {}, "Trace ", select));
}

async function load() {
  node.setAttribute("aria-busy", "true");
  try {
    const d = await api(`${jobPath}/views?trace=${view.trace}`);
    view.data = d;
    title.textContent = `${d.name || jobId}: profile`;
    document.title = `${d.name || jobId} · profile`;
    jobLink.textContent = d.name || jobId;
    timelineLink.href = `${base}${jobPath}/timeline?trace=${view.trace}`;
    showTracePicker(d);
    draw();
  } catch (error) {
    fill(node, errorBox(error));
  }
}

if (view.tab === "memory") loadMemoryTab(); // beside the views' answer, not after it
load().then(() => requestIdleCallback(() => loadMemoryTab().catch(() => {}))); // ready for a switch to Memory
