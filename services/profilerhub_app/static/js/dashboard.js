// One job's dashboard: `GET api/jobs/{id}/dashboard?trace=N&top=K` drawn as panels (panels.js),
// a rank picker, the all-ranks overview and the per-rank table when the job has several traces
// (ranks_panel.js), links into the timeline.
// A job that is not Ready yet shows what it has streamed so far (`api/jobs/{id}/live`: training
// and system metrics, steps, annotations), redrawn every few seconds as chunks arrive, and turns
// into the full dashboard by itself when ingest finishes (no reload). A Failed job shows its
// reason and whatever of it could still be read. The URL keeps trace and top-k.
import { clearCharts, panel } from "./charts.js";
import { api, base, bytes, count, el, errorBox, fill, jobId, pct, query, seconds, setQuery, statusBadge, us } from "./common.js";
import { showControls } from "./job_controls.js";
import { buildLivePanels, buildPanels } from "./panels.js";
import { ranksPanels } from "./ranks_panel.js";

const LIVE_MS = 3000;
const panelsNode = document.getElementById("panels");
const title = document.getElementById("job-title");
const facts = document.getElementById("job-facts");
const picker = document.getElementById("rank-picker");
const live = document.getElementById("job-live");
const timelineLink = document.getElementById("open-timeline");
const viewsLink = document.getElementById("open-views");
const download = document.getElementById("download");
const actions = document.getElementById("job-actions");

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
  viewsLink.href = `${base}${jobPath}/views?trace=${state.trace}`;
  viewsLink.classList.toggle("hidden", !traces.length);
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

let waiting = null;
let ready = false;
let listed = null; // the job as the jobs list shows it (steps, GPUs, duration)
let ranksAnswer = null; // the ranks answer (a Promise), asked once per page: it is the same for every trace

let liveSeen = ""; // what the live panels last drew (redrawn only when new chunks arrived)

/** The panels' view state a redraw keeps: open tables and the picked annotation. */
function viewState() {
  const open = [...panelsNode.querySelectorAll(".table-toggle[aria-pressed='true']")].map((b) => b.closest(".panel").id);
  const pick = document.getElementById("annotation-pick");
  return { open, annotation: pick ? pick.value : null };
}

function restoreView(view) {
  for (const id of view.open) document.querySelector(`#${id} .table-toggle`)?.click();
  const pick = document.getElementById("annotation-pick");
  if (pick && view.annotation && [...pick.options].some((o) => o.value === view.annotation) && pick.value !== view.annotation) {
    pick.value = view.annotation;
    pick.dispatchEvent(new Event("change"));
  }
}

function liveFacts(job, streamed) {
  const steps = streamed.steps || {};
  const last = (steps.items || []).at(-1);
  const sys = streamed.system || {};
  fill(
    facts,
    fact("status", statusBadge(job.status), "status"),
    fact("steps so far", count(steps.count || 0), "live-steps"),
    last ? fact("last step", us(last.dur_ms * 1000), "last-step") : null,
    sys.duration_s ? fact("running for", seconds(sys.duration_s), "live-duration") : null,
    fact("files uploaded", count(job.raw_files), "files"),
    fact("uploaded", bytes(job.bytes), "bytes"),
  );
}

/** The job as the hub lists it, each time it is read: the Stop/Capture buttons, and the log
 * panel (a `jobstate` event: it follows the log while the run goes on). */
function jobState(job) {
  showControls(actions, job, () => load());
  window.__jobState = job; // for a module that starts listening later
  document.dispatchEvent(new CustomEvent("jobstate", { detail: job }));
}

/** A running job's on-demand captures ingested so far: each opens in the timeline and the
 * Profile page while the run goes on (`trace=` the capture's index). */
function capturesPanel(captures) {
  if (!captures.length) return null;
  const row = (c) =>
    el(
      "li",
      { class: "capture", dataset: { capture: c.capture, index: c.index ?? "" } },
      el("b", {}, `capture ${c.capture}`),
      c.error
        ? el("span", { class: "reason" }, ` could not be read: ${c.error}`)
        : [
            ` · ${count(c.steps)} profiled steps · `,
            el("a", { href: `${base}${jobPath}/timeline?trace=${c.index}`, class: "capture-timeline" }, "Open timeline"),
            " · ",
            el("a", { href: `${base}${jobPath}/views?trace=${c.index}`, class: "capture-views" }, "Operators & kernels"),
          ],
    );
  return panel({
    id: "captures",
    title: "Captured steps",
    wide: true,
    note: "Traces of the PyTorch profiler asked of this run (Capture N steps now), read as they arrived.",
    draw: (node) => node.append(el("ul", { class: "captures" }, captures.map(row))),
  });
}

async function notReady(job) {
  // Not Ready: what has streamed so far, checked again in a few seconds (the page turns into the
  // dashboard by itself when ingest finishes). A Failed job: its reason, and what could be read.
  jobState(job);
  title.textContent = job.name || jobId;
  document.title = `${job.name || jobId} · ${job.status}`;
  const streamed = await api(`${jobPath}/live`);
  liveFacts(job, streamed);
  const failed = job.status === "Failed";
  const seen = JSON.stringify([job.status, streamed.chunks, streamed.skipped_chunks, streamed.captures]);
  if (seen !== liveSeen) {
    liveSeen = seen;
    const view = viewState();
    clearCharts();
    const any = Object.values(streamed.chunks || {}).some((n) => n > 0);
    const lead = failed
      ? el("div", { class: "error-box panel wide", role: "alert" }, el("b", {}, "This job failed: "), job.failure_reason || "no reason recorded", any ? el("p", { class: "note" }, "What it streamed before failing is below.") : null)
      : el("p", { class: "muted panel wide live-note" }, job.status === "Processing" ? "Ingest is reading the traces; the full dashboard appears here when it finishes." : "This run is still going: what it has streamed so far is below, updated as it arrives. The full dashboard appears when ingest finishes.");
    fill(panelsNode, lead, capturesPanel(streamed.captures || []), any || !failed ? buildLivePanels(streamed, ctx) : null);
    restoreView(view);
    panelsNode.dataset.live = String(!failed);
    panelsNode.dataset.liveSteps = String((streamed.steps || {}).count || 0);
  }
  if (failed) {
    live.textContent = "";
    return;
  }
  live.textContent = `${job.status} · updating every ${LIVE_MS / 1000} s`;
  waiting = setTimeout(load, LIVE_MS);
}

async function load() {
  clearTimeout(waiting);
  setQuery({ trace: state.trace || "", top: state.top === 10 ? "" : state.top });
  let d;
  try {
    if (!ready) {
      const job = await api(jobPath);
      if (job.status !== "Ready") return await notReady(job);
      listed = job;
      ready = true;
      jobState(job);
      delete panelsNode.dataset.live;
    }
    // A job of several ranks (the list's figure): its ranks answer is asked beside the dashboard's.
    if (!ranksAnswer && listed && listed.ranks > 1) {
      ranksAnswer = api(`${jobPath}/ranks`); // beside the dashboard's answer, not after it
      ranksAnswer.catch(() => (ranksAnswer = null)); // its error shows with the ranks panel; asked again next load
    }
    d = await api(`${jobPath}/dashboard?trace=${state.trace}&top=${state.top}`);
  } catch (error) {
    fill(panelsNode, errorBox(error));
    if (!ready) waiting = setTimeout(load, LIVE_MS); // a running job: try again (the hub may be restarting)
    return;
  }
  live.textContent = "";
  showFacts(d);
  showPicker(d);
  clearCharts();
  // The ranks' panels first: each panel draws in the frame after it is made, in that order, and
  // the all-ranks overview is what a job of many ranks is opened for.
  let rankNodes = [];
  if ((d.traces || []).length > 1) {
    try {
      const pickTrace = (index) => {
        state.trace = index;
        load();
      };
      ranksAnswer ||= api(`${jobPath}/ranks`);
      rankNodes = (await ranksPanels(ranksAnswer, state.trace, pickTrace)).filter(Boolean);
    } catch (error) {
      rankNodes = [errorBox(error)];
    }
  }
  const nodes = [...rankNodes, ...buildPanels(d, ctx)];
  fill(panelsNode, nodes);
  panelsNode.dataset.trace = String(state.trace);
  panelsNode.dataset.top = String(state.top);
  panelsNode.dataset.ready = "true";
}

window.addEventListener("themechange", () => load());
load();
