// One job's dashboard: `GET api/jobs/{id}/dashboard?trace=N&top=K` drawn as panels (panels.js),
// a rank picker and per-rank table when the job has several traces, links into the timeline.
// A job that is not Ready yet shows its state and turns into the dashboard by itself when
// ingest finishes (no reload). The URL keeps trace and top-k.
import { clearCharts, dataTable, panel } from "./charts.js";
import { api, base, count, el, errorBox, fill, jobId, pct, query, seconds, setQuery, statusBadge, us } from "./common.js";
import { buildPanels } from "./panels.js";

const LIVE_MS = 3000;
const panelsNode = document.getElementById("panels");
const title = document.getElementById("job-title");
const facts = document.getElementById("job-facts");
const picker = document.getElementById("rank-picker");
const live = document.getElementById("job-live");
const timelineLink = document.getElementById("open-timeline");
const download = document.getElementById("download");

const initial = query();
const state = { trace: Number(initial.trace) || 0, top: Math.max(1, Math.min(1000, Number(initial.top) || 10)) };

const jobPath = `jobs/${encodeURIComponent(jobId)}`;

function timelineHref(params = {}) {
  const search = new URLSearchParams({ trace: String(state.trace) });
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) search.set(k, String(v));
  return `${base}${jobPath}/timeline?${search}`;
}

const ctx = {
  get top() {
    return state.top;
  },
  setTop(k) {
    state.top = k;
    load();
  },
  timelineHref,
  openTimeline(params) {
    location.href = timelineHref(params);
  },
};

function fact(label, value, id) {
  return el("div", { class: "fact" }, el("b", { "data-fact": id }, value), el("span", {}, label));
}

function showFacts(d) {
  const job = d.job || {};
  title.textContent = d.name || jobId;
  document.title = `${d.name || jobId} · dashboard`;
  const report = d.panels || {};
  fill(
    facts,
    fact("status", statusBadge("Ready"), "status"),
    fact("duration", seconds(job.duration_s ?? (listed && listed.duration_s) ?? null), "duration"),
    fact("steps", count(listed ? listed.steps : null), "steps"),
    report.step_time && report.step_time.count ? fact("profiled steps", count(report.step_time.count), "profiled-steps") : null,
    fact("ranks", count((d.traces || []).length), "ranks"),
    listed && listed.gpus ? fact("GPUs", count(listed.gpus), "gpus") : null,
    fact("GPU active", report.gpu_active ? pct(report.gpu_active.pct) : "–", "gpu-active"),
    job.host ? fact("host", job.host, "host") : null,
    d.partial ? fact("note", "partial: the run ended early", "partial") : null,
  );
}

function showPicker(d) {
  const traces = d.traces || [];
  timelineLink.href = timelineHref();
  download.href = `${base}api/${jobPath}/traces/${state.trace}/raw`;
  download.classList.toggle("hidden", !traces.length);
  timelineLink.classList.toggle("hidden", !traces.length);
  if (traces.length < 2) return fill(picker);
  const select = el(
    "select",
    { id: "rank-select", "aria-label": "rank" },
    traces.map((t) => el("option", { value: t.index, selected: t.index === state.trace }, `rank ${t.rank ?? t.index} · ${t.file}`)),
  );
  select.addEventListener("change", () => {
    state.trace = Number(select.value);
    load();
  });
  fill(picker, el("label", { class: "muted" }, "Rank ", select));
}

async function ranksPanel() {
  const data = await api(`${jobPath}/ranks`);
  const stragglers = new Set(((data.stragglers && data.stragglers.stragglers) || []).map((s) => s.rank));
  const list = (data.stragglers && data.stragglers.stragglers) || [];
  return panel({
    id: "ranks",
    title: "Ranks side by side",
    wide: true,
    note: list.length
      ? `Stragglers (highlighted): ${list.map((s) => `rank ${s.rank} (${s.metric} ${Number(s.ratio).toFixed(2)}× the median)`).join(", ")}.`
      : "No straggler: every rank is within the threshold of the median.",
    draw: (node) =>
      node.append(
        dataTable(
          [
            { label: "rank", num: true, get: (r) => (stragglers.has(r.rank) ? `⚠ ${r.rank}` : r.rank) },
            { label: "file", get: (r) => r.file },
            { label: "step time", num: true, get: (r) => us(r.step_time_us) },
            { label: "GPU util.", num: true, get: (r) => pct(r.gpu_utilization_pct) },
            { label: "communication", num: true, get: (r) => us(r.communication_us) },
            { label: "compute", num: true, get: (r) => us(r.compute_us) },
            { label: "idle", num: true, get: (r) => us(r.idle_us) },
          ],
          data.ranks,
          { rowClass: (r) => (stragglers.has(r.rank) ? "straggler" : "") },
        ),
      ),
  });
}

let waiting = null;
let ready = false;
let listed = null; // the job as the jobs list shows it (steps, GPUs, duration)

async function notReady(job) {
  // Not Ready: show the job's state, check again in a few seconds (the page turns into the
  // dashboard by itself when ingest finishes).
  title.textContent = job.name || jobId;
  fill(facts, fact("status", statusBadge(job.status), "status"), fact("files uploaded", count(job.raw_files), "files"));
  if (job.status === "Failed") {
    live.textContent = "";
    fill(panelsNode, el("div", { class: "error-box", role: "alert" }, `This job failed: ${job.failure_reason || "no reason recorded"}`));
    return;
  }
  live.textContent = `${job.status}: the dashboard appears when ingest finishes · checking every ${LIVE_MS / 1000} s`;
  fill(panelsNode, el("p", { class: "muted" }, "This job is still running or being processed."));
  waiting = setTimeout(load, LIVE_MS);
}

async function load() {
  clearTimeout(waiting);
  setQuery({ trace: state.trace || "", top: state.top === 10 ? "" : state.top });
  let d;
  try {
    if (!ready) {
      const job = await api(jobPath);
      if (job.status !== "Ready") return notReady(job);
      listed = job;
      ready = true;
    }
    d = await api(`${jobPath}/dashboard?trace=${state.trace}&top=${state.top}`);
  } catch (error) {
    fill(panelsNode, errorBox(error));
    return;
  }
  live.textContent = "";
  showFacts(d);
  showPicker(d);
  clearCharts();
  const nodes = buildPanels(d, ctx);
  if ((d.traces || []).length > 1) {
    try {
      nodes.unshift(await ranksPanel());
    } catch (error) {
      nodes.unshift(errorBox(error));
    }
  }
  fill(panelsNode, nodes);
  panelsNode.dataset.trace = String(state.trace);
  panelsNode.dataset.top = String(state.top);
  panelsNode.dataset.ready = "true";
}

window.addEventListener("themechange", () => load());
load();
