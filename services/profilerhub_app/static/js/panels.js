// The dashboard's panels, one function each, from `GET api/jobs/{id}/dashboard` (docs/app-api.md).
// SageMaker Profiler's panels first, then what HTA adds. Each panel draws the engine's numbers;
// formatting (µs -> ms, thousands separators) is all the browser does to them.
import { barList, dataTable, histogram, lineChart, panel, stackBar } from "./charts.js";
import { bytes, count, el, num, pct, seconds, us } from "./common.js";

const has = (v) => (Array.isArray(v) ? v.length > 0 : v !== null && v !== undefined && v.count !== 0);
const NO_GPU = "No GPU work in this trace (a CPU-only run).";

/** Time axis (µs of the trace) -> seconds from the first bucket, for charts. */
function relSeconds(startUs, bucketUs, n) {
  return Array.from({ length: n }, (_, i) => ((i * bucketUs) / 1e6));
}

function kpis(items) {
  return el("div", { class: "kpis" }, items.map(([label, value, id, raw]) => el("div", {}, el("span", {}, label), el("b", { class: "big", "data-kpi": id, "data-raw": raw }, value))));
}

function activePanel(id, title, data, partsKey, partLabel) {
  if (!data || !data.span_us) return panel({ id, title, empty: id === "gpu-active" ? NO_GPU : "No CPU events in this trace." });
  const parts = data[partsKey] || [];
  return panel({
    id,
    title,
    note: id === "gpu-active" ? "Time at least one GPU op (kernel, memcpy, memset) ran, over the trace's span." : "Time inside any CPU event, over the union of all threads.",
    draw: (node) => {
      node.append(kpis([["active", pct(data.pct), `${id}-pct`, data.pct], ["active time", us(data.active_us), `${id}-us`, data.active_us], ["span", us(data.span_us), `${id}-span`, data.span_us]]));
      const bars = el("div");
      node.append(bars);
      barList(bars, parts.slice(0, 12).map((p, i) => ({ label: partLabel(p), value: p.pct, text: `${pct(p.pct)} · ${us(p.active_us)}`, colorIndex: i })), { max: 100 });
    },
    table: () => dataTable([{ label: partsKey === "devices" ? "device" : "thread", get: partLabel }, { label: "active", num: true, get: (r) => us(r.active_us) }, { label: "%", num: true, get: (r) => pct(r.pct) }], parts),
  });
}

function utilizationPanel(id, title, rows, labelOf, ctx, emptyText) {
  if (!has(rows)) return panel({ id, title, empty: emptyText });
  const longest = rows.reduce((a, r) => (r.busy_pct.length > a.busy_pct.length ? r : a), rows[0]);
  const x = relSeconds(longest.start_us, longest.bucket_us, longest.busy_pct.length);
  return panel({
    id,
    title,
    wide: true,
    note: `Busy % per ${us(longest.bucket_us)} bucket. Click the chart to open the timeline there.`,
    draw: (node) =>
      lineChart(node, {
        x,
        series: rows.map((r, i) => ({ label: labelOf(r), values: r.busy_pct.map((v) => v ?? null), colorIndex: i })),
        xLabel: "seconds",
        yLabel: "busy %",
        xFormat: (v) => num(v),
        yFormat: (v) => pct(v),
        yRange: [0, 100],
        stepped: true,
        onPick: (_, i) => ctx.openTimeline({ t0us: longest.start_us + i * longest.bucket_us, t1us: longest.start_us + (i + 1) * longest.bucket_us }),
      }),
    table: () =>
      dataTable(
        [{ label: "from (s)", num: true, get: (r) => num(r.t) }, ...rows.map((row, j) => ({ label: labelOf(row), num: true, get: (r) => pct(rows[j].busy_pct[r.i]) }))],
        x.map((t, i) => ({ t, i })),
      ),
  });
}

function kernelTimePanel(id, title, data, ctx, adjustable) {
  if (!data || !has(data.top)) return panel({ id, title, empty: NO_GPU });
  const rows = data.top.map((k, i) => ({ label: k.name, value: k.total_us, text: `${us(k.total_us)} · ${pct(k.pct)}`, href: ctx.timelineHref({ q: k.name }), title: `${k.name}: ${count(k.count)} launches, mean ${us(k.mean_us)} (open in the timeline)`, colorIndex: i }));
  if (data.other && data.other.kernels) rows.push({ label: `other (${count(data.other.kernels)} kernels)`, value: data.other.total_us, text: `${us(data.other.total_us)} · ${pct(data.other.pct)}`, colorIndex: 7 });
  return panel({
    id,
    title,
    note: `${count(data.count)} kernel launches, ${us(data.total_us)} in all. Click a kernel to find it in the timeline.`,
    tools: adjustable ? topInput(ctx, id) : [],
    draw: (node) => barList(node, rows),
    table: () =>
      dataTable(
        [
          { label: "kernel", get: (r) => r.name },
          { label: "launches", num: true, get: (r) => count(r.count), raw: (r) => r.count },
          { label: "total", num: true, get: (r) => us(r.total_us), raw: (r) => r.total_us },
          { label: "mean", num: true, get: (r) => us(r.mean_us) },
          { label: "min", num: true, get: (r) => us(r.min_us) },
          { label: "max", num: true, get: (r) => us(r.max_us) },
          { label: "%", num: true, get: (r) => pct(r.pct) },
        ],
        [...data.top, ...(data.other && data.other.kernels ? [{ name: `other (${data.other.kernels} kernels)`, ...data.other }] : [])],
      ),
  });
}

function launchCountsPanel(id, title, data, ctx, adjustable) {
  if (!data || !has(data.top)) return panel({ id, title, empty: NO_GPU });
  const rows = data.top.map((k, i) => ({ label: k.name, value: k.count, text: `${count(k.count)} · ${pct(k.pct)}`, href: ctx.timelineHref({ q: k.name }), colorIndex: i }));
  if (data.other && data.other.kernels) rows.push({ label: `other (${count(data.other.kernels)} kernels)`, value: data.other.count, text: `${count(data.other.count)} · ${pct(data.other.pct)}`, colorIndex: 7 });
  return panel({
    id,
    title,
    note: `${count(data.total)} launches in all.`,
    tools: adjustable ? topInput(ctx, id) : [],
    draw: (node) => barList(node, rows),
    table: () => dataTable([{ label: "kernel", get: (r) => r.name }, { label: "launches", num: true, get: (r) => count(r.count) }, { label: "%", num: true, get: (r) => pct(r.pct) }], [...data.top, ...(data.other && data.other.kernels ? [{ name: "other", ...data.other }] : [])]),
  });
}

function topInput(ctx, id) {
  const input = el("input", { type: "number", min: 1, max: 1000, value: ctx.top, id: `${id}-k`, "aria-label": "how many kernels (top k)" });
  input.addEventListener("change", () => {
    const k = Math.max(1, Math.min(1000, Number(input.value) || 10));
    ctx.setTop(k);
  });
  return [el("label", { for: `${id}-k`, class: "muted" }, "top"), input];
}

function stepTimePanel(data, ctx) {
  if (!data || !data.count) return panel({ id: "step-time", title: "Step time distribution", empty: "No ProfilerStep markers in this trace." });
  return panel({
    id: "step-time",
    title: "Step time distribution",
    note: `${count(data.count)} steps · median ${us(data.p50_us)} · p90 ${us(data.p90_us)} · min ${us(data.min_us)} · max ${us(data.max_us)}`,
    draw: (node) => histogram(node, { ...data.histogram, edges: data.histogram.edges_us, xLabel: "step time", xFormat: us, colorIndex: 0 }),
    table: () => dataTable([{ label: "step", num: true, get: (r) => r.step }, { label: "duration", num: true, get: (r) => us(r.duration_us) }], data.steps || []),
  });
}

function sharePanel(id, title, rows, key, emptyText, note) {
  if (!has(rows)) return panel({ id, title, empty: emptyText });
  return panel({
    id,
    title,
    note,
    draw: (node) => stackBar(node, rows.map((r, i) => ({ label: r[key], value: r.total_us ?? r.count, text: `${pct(r.pct)} · ${us(r.total_us)}`, colorIndex: i }))),
    table: () =>
      dataTable(
        [
          { label: key, get: (r) => r[key] },
          { label: "count", num: true, get: (r) => count(r.count), raw: (r) => r.count },
          { label: "time", num: true, get: (r) => us(r.total_us), raw: (r) => r.total_us },
          { label: "%", num: true, get: (r) => pct(r.pct), raw: (r) => r.pct },
        ],
        rows,
      ),
  });
}

function memoryOpsPanel(rows) {
  if (!has(rows)) return panel({ id: "memory-ops", title: "GPU memory operations", empty: "No memcpy or memset in this trace." });
  return panel({
    id: "memory-ops",
    title: "GPU memory operations",
    note: "Copies and sets by kind, with the bytes moved and the achieved bandwidth.",
    draw: (node) => barList(node, rows.map((r, i) => ({ label: r.kind, value: r.total_us, text: `${us(r.total_us)} · ${bytes(r.bytes)} · ${num(r.bandwidth_gbps)} GB/s`, colorIndex: i }))),
    table: () =>
      dataTable(
        [
          { label: "kind", get: (r) => r.kind },
          { label: "count", num: true, get: (r) => count(r.count) },
          { label: "time", num: true, get: (r) => us(r.total_us), raw: (r) => r.total_us },
          { label: "bytes", num: true, get: (r) => bytes(r.bytes), raw: (r) => r.bytes },
          { label: "GB/s", num: true, get: (r) => num(r.bandwidth_gbps) },
        ],
        rows,
      ),
  });
}

function annotationsPanel(data) {
  const names = (data && data.names) || [];
  if (!names.length) return panel({ id: "annotations", title: "Annotation histogram", empty: "No annotations (ph.annotate or record_function) in this trace." });
  const select = el("select", { id: "annotation-pick", "aria-label": "annotation" }, names.map((n) => el("option", { value: n.name }, n.name)));
  let chartNode = null;
  const stats = el("p", { class: "note" });
  const draw = () => {
    const name = select.value;
    const row = names.find((n) => n.name === name);
    const h = data.histograms[name];
    stats.textContent = row ? `${count(row.count)} × · total ${us(row.total_us)} · mean ${us(row.mean_us)} · max ${us(row.max_us)}` : "";
    if (chartNode.uplot) chartNode.uplot.destroy();
    chartNode.replaceChildren();
    if (h) histogram(chartNode, { edges: h.edges_us, counts: h.counts, xLabel: `${name} duration`, xFormat: us, colorIndex: 3 });
  };
  select.addEventListener("change", draw);
  return panel({
    id: "annotations",
    title: "Annotation histogram",
    tools: [select],
    draw: (node) => {
      node.append(stats);
      chartNode = el("div");
      node.append(chartNode);
      draw();
    },
    table: () =>
      dataTable(
        [
          { label: "annotation", get: (r) => r.name },
          { label: "count", num: true, get: (r) => count(r.count) },
          { label: "total", num: true, get: (r) => us(r.total_us) },
          { label: "mean", num: true, get: (r) => us(r.mean_us) },
          { label: "max", num: true, get: (r) => us(r.max_us) },
        ],
        names,
      ),
  });
}

function launchLatencyPanel(data) {
  if (!data || !data.count) return panel({ id: "launch-latency", title: "Launch latency distribution", empty: NO_GPU });
  const apis = Object.entries(data.by_api || {}).map(([name, n]) => `${name} ${count(n)}`).join(" · ");
  return panel({
    id: "launch-latency",
    title: "Launch latency distribution",
    note: `From the CPU launch call to the GPU op's start: ${count(data.count)} launches · median ${us(data.p50_us)} · p95 ${us(data.p95_us)} · max ${us(data.max_us)}. ${apis}`,
    draw: (node) => histogram(node, { edges: data.histogram.edges_us, counts: data.histogram.counts, xLabel: "latency", xFormat: us, colorIndex: 1 }),
    table: () =>
      dataTable(
        [{ label: "from", num: true, get: (r) => us(r.lo) }, { label: "to", num: true, get: (r) => (r.hi === undefined ? "∞" : us(r.hi)) }, { label: "launches", num: true, get: (r) => count(r.n) }],
        data.histogram.counts.map((n, i) => ({ n, lo: data.histogram.edges_us[i], hi: data.histogram.edges_us[i + 1] })),
      ),
  });
}

function idlePanel(rows) {
  if (!has(rows)) return panel({ id: "idle", title: "Idle time per stream", empty: NO_GPU });
  const parts = [["host wait", "host_wait_us"], ["kernel wait", "kernel_wait_us"], ["other", "other_us"]];
  return panel({
    id: "idle",
    title: "Idle time per stream",
    note: "Why each stream waited: for the host (CPU) to launch, for another kernel, or other.",
    draw: (node) => {
      for (const r of rows) {
        const box = el("div");
        node.append(el("p", { class: "note" }, `GPU ${r.device} · stream ${r.stream}: idle ${us(r.idle_us)}`), box);
        stackBar(box, parts.map(([label, key], i) => ({ label, value: r[key], text: us(r[key]), colorIndex: [1, 0, 7][i] })));
      }
    },
    table: () =>
      dataTable(
        [
          { label: "GPU", num: true, get: (r) => r.device },
          { label: "stream", num: true, get: (r) => r.stream },
          { label: "idle", num: true, get: (r) => us(r.idle_us) },
          { label: "host wait", num: true, get: (r) => us(r.host_wait_us) },
          { label: "kernel wait", num: true, get: (r) => us(r.kernel_wait_us) },
          { label: "other", num: true, get: (r) => us(r.other_us) },
        ],
        rows,
      ),
  });
}

function temporalPanel(rows) {
  if (!has(rows)) return panel({ id: "temporal", title: "Temporal breakdown per GPU", empty: NO_GPU });
  return panel({
    id: "temporal",
    title: "Temporal breakdown per GPU",
    note: "Share of each GPU's span spent computing, in non-compute work (memory, sync) and idle.",
    draw: (node) => {
      for (const r of rows) {
        const box = el("div");
        node.append(el("p", { class: "note" }, `GPU ${r.device} · span ${us(r.span_us)}`), box);
        stackBar(box, [
          { label: "compute", value: r.compute_us, text: `${pct(r.compute_pct)}`, colorIndex: 0 },
          { label: "non-compute", value: r.non_compute_us, text: us(r.non_compute_us), colorIndex: 1 },
          { label: "idle", value: r.idle_us, text: `${pct(r.idle_pct)}`, colorIndex: 7 },
        ]);
      }
    },
    table: () =>
      dataTable(
        [
          { label: "GPU", num: true, get: (r) => r.device },
          { label: "compute", num: true, get: (r) => us(r.compute_us), raw: (r) => r.compute_us },
          { label: "non-compute", num: true, get: (r) => us(r.non_compute_us), raw: (r) => r.non_compute_us },
          { label: "idle", num: true, get: (r) => us(r.idle_us), raw: (r) => r.idle_us },
          { label: "compute %", num: true, get: (r) => pct(r.compute_pct) },
          { label: "idle %", num: true, get: (r) => pct(r.idle_pct) },
        ],
        rows,
      ),
  });
}

function stepsPanel(rows, ctx) {
  if (!has(rows)) return panel({ id: "steps", title: "Per-step breakdown", empty: "No ProfilerStep markers in this trace." });
  const keys = [["kernels", "kernel_us", 0], ["memory", "memory_us", 1], ["sync", "sync_us", 5], ["CPU only", "cpu_only_us", 7]];
  return panel({
    id: "steps",
    title: "Per-step breakdown",
    wide: true,
    note: "Where each step's time went. Click a step to open it in the timeline.",
    draw: (node) => {
      const list = el("div", { class: "bars" });
      const max = Math.max(...rows.map((r) => r.duration_us)) || 1;
      for (const r of rows) {
        const track = el("div", { class: "stack" });
        track.style.width = `${(100 * r.duration_us) / max}%`;
        for (const [label, key, c] of keys) {
          const part = el("div", { class: `sw${c}`, title: `${label}: ${us(r[key])}` });
          part.style.width = `${(100 * (r[key] || 0)) / (r.duration_us || 1)}%`;
          track.append(part);
        }
        list.append(
          el("a", { class: "label", href: ctx.timelineHref({ t0us: r.start_us, t1us: r.start_us + r.duration_us }) }, r.name || `step ${r.step}`),
          el("div", {}, track),
          el("span", { class: "value" }, us(r.duration_us)),
        );
      }
      node.append(list, el("div", { class: "legend" }, keys.map(([label, , c]) => el("span", {}, el("i", { class: `sw${c}` }), label))));
    },
    table: () =>
      dataTable(
        [
          { label: "step", num: true, get: (r) => r.step },
          { label: "duration", num: true, get: (r) => us(r.duration_us) },
          ...keys.map(([label, key]) => ({ label, num: true, get: (r) => us(r[key]) })),
        ],
        rows,
      ),
  });
}

function simpleTable(id, title, rows, columns, emptyText, note) {
  if (!has(rows)) return panel({ id, title, empty: emptyText });
  return panel({ id, title, note, draw: (node) => node.append(dataTable(columns, rows)) });
}

function cpuOpsPanel(rows, ctx) {
  if (!has(rows)) return panel({ id: "cpu-ops", title: "Top CPU operators", empty: "No CPU operators in this trace." });
  return panel({
    id: "cpu-ops",
    title: "Top CPU operators",
    note: "By inclusive time. Click one to find it in the timeline.",
    draw: (node) => barList(node, rows.slice(0, 20).map((r, i) => ({ label: r.name, value: r.total_us, text: `${us(r.total_us)} · ${count(r.count)}×`, href: ctx.timelineHref({ q: r.name }), colorIndex: 2 }))),
    table: () => dataTable([{ label: "operator", get: (r) => r.name }, { label: "count", num: true, get: (r) => count(r.count) }, { label: "total", num: true, get: (r) => us(r.total_us) }, { label: "mean", num: true, get: (r) => us(r.mean_us) }], rows),
  });
}

/** How a series' values read: bytes and bytes per second by the name's unit, else a number. */
function unitOf(name) {
  if (name.endsWith("_bytes_per_s")) return (v) => (v === null || v === undefined ? "–" : `${bytes(v)}/s`);
  if (name.endsWith("_bytes")) return bytes;
  return num;
}

function seriesPanel(id, title, entries, { xLabel, xFormat, emptyText }) {
  if (!entries.length) return panel({ id, title, empty: emptyText });
  return panel({
    id,
    title,
    wide: true,
    draw: (node) => {
      const grid = el("div", { class: "panels" });
      node.append(grid);
      entries.forEach(([name, m, series], i) => {
        const box = el("div");
        const f = unitOf(name);
        grid.append(el("div", {}, el("p", { class: "note" }, el("b", {}, name), m.last !== undefined ? ` · last ${f(m.last)}` : ` · mean ${f(m.mean)}`, ` · min ${f(m.min)} · max ${f(m.max)}`), box));
        requestAnimationFrame(() =>
          lineChart(box, { x: series.map((p) => p[0]), series: [{ label: name, values: series.map((p) => p[1]), colorIndex: i }], xLabel, xFormat, yFormat: f, height: 170 }),
        );
      });
    },
    table: () =>
      el(
        "div",
        {},
        entries.map(([name, , series]) => el("div", {}, el("h3", { class: "note" }, name), dataTable([{ label: xLabel, num: true, get: (p) => xFormat(p[0]) }, { label: "value", num: true, get: (p) => unitOf(name)(p[1]) }], series))),
      ),
  });
}

function metricPanels(p) {
  const metrics = Object.entries(p.metrics || {}).filter(([, m]) => (m.series || []).length);
  const timeMetrics = Object.entries(p.metrics || {}).filter(([, m]) => (m.time_series || []).length);
  const system = Object.entries((p.system && p.system.metrics) || {}).filter(([, m]) => (m.series || []).length);
  return {
    metrics: seriesPanel("metrics", "Training metrics by step", metrics.map(([n, m]) => [n, m, m.series]), { xLabel: "step", xFormat: (v) => count(v), emptyText: "No training metrics (ph.log_metric or metric_definitions) for this job." }),
    time: seriesPanel("metrics-time", "Training metrics over time", timeMetrics.map(([n, m]) => [n, m, m.time_series]), { xLabel: "seconds", xFormat: (v) => num(v), emptyText: "No training metrics over time for this job." }),
    system: seriesPanel("system", "System metrics", system.map(([n, m]) => [n, m, m.series]), { xLabel: "seconds", xFormat: (v) => num(v), emptyText: "No system metrics (the SDK samples them while a job runs)." }),
  };
}

/** The panels of what a job still running has streamed (`api/jobs/{id}/live`): its training and
 * system metrics, steps and annotations, drawn by the same panels as the full dashboard. */
export function buildLivePanels(live, ctx) {
  const p = { ...(live.panels || {}), metrics: live.metrics, system: live.system };
  const m = metricPanels(p);
  return [m.metrics, m.system, stepTimePanel(p.step_time, ctx), annotationsPanel(p.annotations), m.time];
}

/** Every panel of one trace's dashboard, in reading order. */
export function buildPanels(d, ctx) {
  const p = d.panels;
  const m = metricPanels(p);
  return [
    activePanel("gpu-active", "GPU active time", p.gpu_active, "devices", (r) => `GPU ${r.device}`),
    activePanel("cpu-active", "CPU active time", p.cpu_active, "threads", (r) => r.name || `thread ${r.tid}`),
    utilizationPanel("gpu-util", "GPU utilisation over time", p.gpu_utilization, (r) => `GPU ${r.device}`, ctx, NO_GPU),
    utilizationPanel("cpu-util", "CPU utilisation over time", p.cpu_utilization, (r) => `process ${r.pid} (${r.threads} threads)`, ctx, "No CPU events in this trace."),
    kernelTimePanel("kernel-time", "Time spent by all GPU kernels", p.kernel_time, ctx, true),
    kernelTimePanel("kernel-time-15", "Time spent by the top 15 GPU kernels", p.kernel_time_top15, ctx, false),
    launchCountsPanel("launch-counts", "Launch counts of all GPU kernels", p.launch_counts, ctx, true),
    launchCountsPanel("launch-counts-15", "Launch counts of the top 15 GPU kernels", p.launch_counts_top15, ctx, false),
    stepTimePanel(p.step_time, ctx),
    sharePanel("precision", "Kernel precision distribution", p.precision, "precision", NO_GPU, "Compute kernels by data type, by time."),
    sharePanel("gpu-activity", "GPU activity distribution", p.gpu_activity, "activity", NO_GPU, "Kernels, memory copies and sets, synchronisation, by time."),
    memoryOpsPanel(p.memory_ops),
    annotationsPanel(p.annotations),
    launchLatencyPanel(p.launch_latency),
    idlePanel(p.idle_breakdown),
    temporalPanel(p.temporal),
    stepsPanel(p.steps, ctx),
    simpleTable(
      "memory-bw",
      "Memory copies with bandwidth",
      p.memory_bw,
      [
        { label: "GPU", num: true, get: (r) => r.device },
        { label: "kind", get: (r) => r.kind },
        { label: "count", num: true, get: (r) => count(r.count) },
        { label: "bytes", num: true, get: (r) => bytes(r.bytes) },
        { label: "busy", num: true, get: (r) => us(r.busy_us) },
        { label: "peak GB/s", num: true, get: (r) => num(r.peak_gbps) },
        { label: "mean GB/s", num: true, get: (r) => num(r.mean_gbps) },
      ],
      "No memory copies in this trace.",
    ),
    cpuOpsPanel(p.cpu_ops, ctx),
    simpleTable(
      "launch-stats",
      "Kernel launch statistics",
      p.launch_stats,
      [
        { label: "GPU", num: true, get: (r) => r.device },
        { label: "launches", num: true, get: (r) => count(r.launches) },
        { label: "short GPU ops", num: true, get: (r) => count(r.short_gpu_ops) },
        { label: "runtime outliers", num: true, get: (r) => count(r.runtime_outliers) },
        { label: "launch delay outliers", num: true, get: (r) => count(r.launch_delay_outliers) },
      ],
      NO_GPU,
      "HTA's launch statistics: GPU ops shorter than their launch, and outliers of runtime and delay.",
    ),
    simpleTable(
      "queue-length",
      "Queue length per stream",
      p.queue_length,
      [
        { label: "GPU", num: true, get: (r) => r.device },
        { label: "stream", num: true, get: (r) => r.stream },
        { label: "mean", num: true, get: (r) => num(r.mean) },
        { label: "p50", num: true, get: (r) => num(r.p50) },
        { label: "max", num: true, get: (r) => num(r.max) },
      ],
      NO_GPU,
      "Outstanding GPU ops launched but not finished, per stream.",
    ),
    simpleTable(
      "overlap",
      "Communication / computation overlap",
      p.comm_comp_overlap,
      [
        { label: "GPU", num: true, get: (r) => r.device },
        { label: "comm kernels", num: true, get: (r) => count(r.comm_kernels) },
        { label: "comm", num: true, get: (r) => us(r.comm_us) },
        { label: "compute", num: true, get: (r) => us(r.compute_us) },
        { label: "overlap", num: true, get: (r) => us(r.overlap_us) },
        { label: "overlap %", num: true, get: (r) => pct(r.overlap_pct) },
      ],
      "No communication kernels (NCCL) in this trace.",
    ),
    simpleTable(
      "gpu-metrics",
      "GPU efficiency",
      p.gpu_metrics,
      [
        { label: "GPU", num: true, get: (r) => r.device },
        { label: "utilisation", num: true, get: (r) => pct(r.gpu_utilization_pct) },
        { label: "SM efficiency", num: true, get: (r) => pct(r.sm_efficiency_pct) },
        { label: "occupancy", num: true, get: (r) => pct(r.achieved_occupancy_pct) },
      ],
      NO_GPU,
      "As in TensorBoard's profiler overview.",
    ),
    m.metrics,
    m.time,
    m.system,
  ];
}

export { seconds };
