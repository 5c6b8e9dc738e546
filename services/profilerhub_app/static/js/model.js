// The Model page: a job's ph.watch tensors as the engine cuts them: the index and one tensor's
// series from the tensors API (api/jobs/{id}/tensors, …/tensors/{name}), the heat map and the
// histogram shares from the page's views (…/tensors/matrix, …/tensors/hist).
// Losses by mode on one chart (eval drawn at the train step it ran), a per-layer heat map of any
// statistic over steps (click or Enter on a cell: that tensor's series and its histogram over
// steps), the model rules' findings with buttons that outline their step range, and two jobs'
// global gradient norms side by side. Every chart has a Table button. While the job runs the
// page reads the tensors again every few seconds. The URL keeps the controls and the picked tensor.
import { dataTable, drawQueuedNow, lineChart, panel } from "./charts.js";
import { api, base, el, errorBox, fill, jobId, poll, query, setQuery, statusBadge } from "./common.js";
import { heatMap } from "./heatmap.js";

const LIVE_MS = 5000;
const jobPath = `jobs/${encodeURIComponent(jobId)}`;
const panels = document.getElementById("model-panels");
const findingsNode = document.getElementById("model-findings");
const live = document.getElementById("model-live");
const controls = {
  collection: document.getElementById("m-collection"),
  stat: document.getElementById("m-stat"),
  mode: document.getElementById("m-mode"),
  rank: document.getElementById("m-rank"),
};
const state = { index: null, rows: -1, heat: null, tensor: query().tensor || "", band: null };
const num = (v) => (v === null || v === undefined ? "–" : Number(v).toPrecision(4));
const q = (o) => new URLSearchParams(o).toString();
/** A tensor's name in a path: each part escaped, the slashes kept (`gradients/fc.weight`). */
const tensorPath = (name) => name.split("/").map(encodeURIComponent).join("/");

function options(select, values, chosen) {
  fill(select, values.map((v) => el("option", { value: String(v), selected: String(v) === String(chosen) }, String(v))));
}

function chosen() {
  return {
    collection: controls.collection.value,
    stat: controls.stat.value,
    mode: controls.mode.value,
    rank: controls.rank.value || "0",
  };
}

/** Align several (x, y) series on the union of their x (display only: no value is computed). */
function aligned(lines) {
  const xs = [...new Set(lines.flatMap((l) => l.x))].sort((a, b) => a - b);
  const at = new Map(xs.map((x, i) => [x, i]));
  const series = lines.map((l, i) => {
    const values = new Array(xs.length).fill(null);
    l.x.forEach((x, k) => (values[at.get(x)] = l.y[k]));
    return { label: l.label, values, colorIndex: i, sparse: l.x.length < xs.length };
  });
  return { x: xs, series };
}

/** A table of `rows` (arrays) under `headers` (strings): the charts' text alternative. */
function grid(headers, rows) {
  return dataTable(
    headers.map((label, i) => ({ label, get: (r) => r[i], num: i > 0 })),
    rows,
  );
}

function lineTable(data, xLabel) {
  return grid([xLabel, ...data.series.map((s) => s.label)], data.x.map((x, i) => [x, ...data.series.map((s) => num(s.values[i]))]));
}

async function lossesPanel(index, rank) {
  const names = index.tensors.filter((t) => t.collection === "losses").map((t) => t.name);
  const lines = [];
  for (const name of names) {
    for (const mode of index.modes) {
      const s = await api(`${jobPath}/tensors/${tensorPath(name)}?${q({ stat: "mean", mode, rank })}`).catch(() => null);
      if (!s || !s.steps.length) continue;
      lines.push({ label: `${name.split("/").slice(1).join("/")} (${mode})`, x: mode === "train" ? s.steps : s.global_steps, y: s.values });
    }
  }
  if (!lines.length) return panel({ id: "p-losses", title: "Losses", empty: "No losses recorded: pass loss_fn to ph.watch." });
  const data = aligned(lines);
  return panel({
    id: "p-losses",
    title: "Losses by mode",
    note: "eval losses at the train step they ran",
    wide: true,
    draw: (node) => lineChart(node, { ...data, xLabel: "step", yLabel: "loss", height: 240 }),
    table: () => lineTable(data, "step"),
  });
}

async function heatPanel(c) {
  const m = await api(`${jobPath}/tensors/matrix?${q(c)}`);
  if (!m.names.length) return panel({ id: "p-heat", title: "Per-layer heat map", empty: `No ${c.collection} recorded in ${c.mode} mode.` });
  const node = panel({
    id: "p-heat",
    title: `${c.stat} of ${c.collection} per layer over steps`,
    note: "click a cell (or focus the map and press Enter) for that tensor's series and histogram",
    wide: true,
    draw: (body) => {
      state.heat = heatMap(body, {
        rows: m.names,
        cols: m.steps,
        values: m.values,
        label: c.stat,
        onPick: (r) => pickTensor(m.names[r]),
      });
      body.dataset.drawn = "true";
      if (state.band) state.heat.highlight(...state.band);
    },
    table: () => grid(["step", ...m.names], m.steps.map((s, j) => [s, ...m.values.map((row) => num(row[j]))])),
  });
  return node;
}

function histRows(h) {
  const e = h.edges;
  const labels = ["0", `< ${e[0].toExponential(1)}`, ...e.slice(1).map((b, i) => `${e[i].toPrecision(2)}–${b.toPrecision(2)}`), `≥ ${e[e.length - 1].toExponential(1)}`];
  const used = labels.map((_, b) => h.fractions.some((row) => row[b] > 0)).map((u, b) => (u ? b : -1)).filter((b) => b >= 0).reverse();
  return { rows: used.map((b) => `|x| ${labels[b]}`), values: used.map((b) => h.fractions.map((row) => row[b])) };
}

async function tensorPanels(name, c) {
  const [s, h] = await Promise.all([
    api(`${jobPath}/tensors/${tensorPath(name)}?${q({ stat: c.stat, mode: c.mode, rank: c.rank })}`),
    api(`${jobPath}/tensors/hist?${q({ name, mode: c.mode, rank: c.rank })}`),
  ]);
  const data = { x: s.steps, series: [{ label: `${c.stat}`, values: s.values }] };
  const series = panel({
    id: "p-series",
    title: `${name}: ${c.stat} over steps`,
    draw: (node) => {
      lineChart(node, { ...data, xLabel: "step", yLabel: c.stat, height: 220 });
      node.dataset.drawn = "true";
    },
    table: () => lineTable(data, "step"),
  });
  series.dataset.tensor = name;
  const hr = histRows(h);
  const dist = panel({
    id: "p-hist",
    title: `${name}: histogram over steps`,
    note: "share of the finite values per magnitude bin at each saved step (TensorBoard's distribution view)",
    empty: h.steps.length ? undefined : "No histogram rows in this mode.",
    draw: (node) => heatMap(node, { rows: hr.rows, cols: h.steps, values: hr.values, log: false, label: "share" }),
    table: () => grid(["bin", ...h.steps], hr.rows.map((r, i) => [r, ...hr.values[i].map(num)])),
  });
  return [series, dist];
}

async function comparePanel(c) {
  const select = el("select", { id: "compare-job", "aria-label": "job to compare with" });
  const node = panel({
    id: "p-compare",
    title: "Compare gradient norms",
    note: "global L2 norm of all gradients per train step (the engine's total over layers)",
    wide: true,
    tools: [el("label", { class: "model-compare" }, "with ", select)],
    draw: (body) => body.append(el("p", { class: "muted" }, "Pick a job to compare with.")),
    table: () => el("p", { class: "muted" }, "Pick a job to compare with."),
  });
  let jobs = [];
  try {
    jobs = ((await api("jobs?limit=1000&sort=name&order=asc")).items || []).filter((j) => j.job_id !== jobId);
  } catch (error) {
    jobs = [];
  }
  options(select, ["", ...jobs.map((j) => j.job_id)], query().compare || "");
  [...select.options].forEach((o) => {
    const j = jobs.find((x) => x.job_id === o.value);
    if (j) o.textContent = `${j.name} (${j.status})`;
    if (!o.value) o.textContent = "— pick a job —";
  });
  const draw = async () => {
    const other = select.value;
    setQuery({ compare: other || null });
    const chart = node.querySelector(".chart");
    const tableBox = node.querySelector(".table-view");
    if (!other) return;
    const path = (id) => `jobs/${encodeURIComponent(id)}/tensors/matrix?${q({ collection: "gradients", stat: "l2", mode: "train", rank: c.rank })}`;
    const [a, b] = await Promise.all([api(path(jobId)), api(path(other)).catch((e) => ({ error: e }))]);
    if (b.error) {
      fill(chart, errorBox(b.error));
      return;
    }
    const name = (id) => jobs.find((j) => j.job_id === id)?.name || id;
    const data = aligned([
      { label: `this job`, x: a.steps, y: a.total || [] },
      { label: name(other), x: b.steps, y: b.total || [] },
    ]);
    fill(chart);
    lineChart(chart, { ...data, xLabel: "step", yLabel: "‖grad‖₂", height: 220 });
    fill(tableBox, lineTable(data, "step"));
    chart.dataset.drawn = "true";
  };
  select.addEventListener("change", draw);
  if (select.value) requestAnimationFrame(draw);
  return node;
}

function flatRules(rules) {
  return rules.flatMap((r) => (r.rules ? r.rules : [r]));
}

async function loadFindings() {
  let data;
  try {
    data = await api(`${jobPath}/rules`);
  } catch (error) {
    fill(findingsNode, el("h2", { id: "findings-title" }, "Model rules"), errorBox(error));
    return;
  }
  const model = flatRules(data.rules || []).filter((r) => (r.figures || {}).evidence_axis === "step" || (r.findings || []).some((f) => f.step_start !== undefined));
  const items = model.map((r) =>
    el(
      "li",
      { dataset: { rule: r.rule, status: r.status } },
      el("span", { class: "rule-name" }, r.rule),
      " ",
      statusBadge(r.status === "Error" && r.missing_data ? "NoData" : r.status),
      " ",
      el("span", { class: "muted" }, r.reason || ""),
      (r.findings || []).length
        ? el(
            "ol",
            {},
            r.findings.map((f) =>
              el(
                "li",
                { class: "model-finding" },
                f.message,
                " ",
                f.step_start !== undefined
                  ? el("button", { type: "button", class: "steps", onclick: () => showRange(f) }, `steps ${f.step_start}–${f.step_end}`)
                  : null,
              ),
            ),
          )
        : null,
    ),
  );
  fill(
    findingsNode,
    el("h2", { id: "findings-title" }, "Model rules"),
    items.length ? el("ul", {}, items) : el("p", { class: "muted" }, "No model rule is configured for this job (ph.init(rules=[\"VanishingGradient\", …]))."),
  );
  findingsNode.dataset.ready = "true";
}

/** A finding's button: its tensor's collection in the heat map, its steps outlined, its tensor picked. */
async function showRange(f) {
  const tensor = (f.tensors || [])[0];
  state.band = [f.step_start, f.step_end];
  setQuery({ steps: `${f.step_start}-${f.step_end}` });
  const collection = tensor ? tensor.split("/")[0] : controls.collection.value;
  if (f.mode && [...controls.mode.options].some((o) => o.value === f.mode)) controls.mode.value = f.mode;
  if ([...controls.collection.options].some((o) => o.value === collection) && controls.collection.value !== collection) {
    controls.collection.value = collection;
  }
  state.tensor = tensor || state.tensor;
  await render();
  document.getElementById("p-heat")?.scrollIntoView({ block: "start" });
}

async function pickTensor(name) {
  state.tensor = name;
  setQuery({ tensor: name });
  const c = chosen();
  const [series, dist] = await tensorPanels(name, c);
  document.getElementById("p-series")?.replaceWith(series);
  document.getElementById("p-hist")?.replaceWith(dist);
  series.querySelector(".panel-head h2")?.focus?.();
}

/** Heat map `h`'s keyboard cell, by tensor and step (what a redraw keeps), while it has focus. */
function heatCursor(h) {
  if (!h || document.activeElement !== h.canvas) return null;
  const [r, c] = h.cursor();
  return { row: h.rows[r], step: h.cols[c] };
}

async function render() {
  const shown = state.heat; // the map on screen: the new one may draw, detached, before it is swapped in
  const index = state.index;
  const c = chosen();
  setQuery({ collection: c.collection, stat: c.stat, mode: c.mode, rank: c.rank });
  const nodes = [await lossesPanel(index, c.rank), await heatPanel(c)];
  const names = index.tensors.map((t) => t.name);
  const tensor = names.includes(state.tensor) ? state.tensor : index.tensors.find((t) => t.collection === c.collection)?.name;
  if (tensor) nodes.push(...(await tensorPanels(tensor, c)));
  nodes.push(await comparePanel(c));
  const kept = heatCursor(shown);
  fill(panels, nodes);
  drawQueuedNow(); // the new map drawn now, so that no key press finds neither map
  if (kept && state.heat && state.heat !== shown) {
    state.heat.moveTo(state.heat.rows.indexOf(kept.row), state.heat.cols.indexOf(kept.step));
    state.heat.canvas.focus(); // the keyboard goes on where it was
  }
  panels.setAttribute("aria-busy", "false");
  panels.dataset.ready = "true";
}

async function load() {
  const index = await api(`${jobPath}/tensors`);
  index.final = !index.live;
  // what has streamed: tensors and saved steps (a new chunk changes it)
  const rows = index.tensors.length + Object.values(index.steps || {}).reduce((n, s) => n + s.length, 0);
  if (!index.final || !state.index) loadFindings();
  live.textContent = index.final ? "" : "live: what the run has streamed so far";
  if (rows === state.rows && state.index) return;
  const first = !state.index;
  state.index = index;
  state.rows = rows;
  if (!index.tensors.length) {
    fill(panels, el("p", { class: "empty" }, "No tensors recorded for this job: ph.watch(model, optimizer=opt, loss_fn=criterion) after ph.init (docs/debugging.md)."));
    panels.dataset.ready = "true";
    return;
  }
  const url = query();
  if (first) {
    const collections = index.collections;
    options(controls.collection, collections, url.collection || (collections.includes("gradients") ? "gradients" : collections[0]));
    options(controls.stat, index.stats, url.stat || "l2");
    options(controls.mode, index.modes, url.mode || (index.modes.includes("train") ? "train" : index.modes[0]));
    options(controls.rank, index.ranks, url.rank || index.ranks[0]);
    if (url.steps && /^\d+-\d+$/.test(url.steps)) state.band = url.steps.split("-").map(Number);
    Object.values(controls).forEach((s) => s.addEventListener("change", () => render().catch(showError)));
  }
  await render();
}

function showError(error) {
  fill(panels, errorBox(error));
}

document.getElementById("model-controls")?.addEventListener("submit", (e) => e.preventDefault());
document.getElementById("dashboard-link")?.setAttribute("href", `${base}${jobPath}`);
poll(() => load().catch(showError), LIVE_MS, () => !(state.index && state.index.final));
