// The compare page: two jobs (or two ranks of one) side by side, from `GET api/compare`
// (`profilerhub compare`'s JSON): the headline figures with their change, kernels and CPU ops
// by impact, what was added or is gone, and links to both timelines at the same step.
import { barList, dataTable } from "./charts.js";
import { api, base, count, el, errorBox, fill, num, pct, query, setQuery, us } from "./common.js";

const baseSelect = document.getElementById("cmp-base");
const testSelect = document.getElementById("cmp-test");
const body = document.getElementById("compare-body");
const form = document.getElementById("compare-form");

// Which way is better for each headline metric (lower time is better, more utilisation is).
const HIGHER_IS_BETTER = new Set(["gpu_utilization_pct"]);
const LABELS = {
  steps: "steps",
  step_time_us: "step time",
  gpu_utilization_pct: "GPU utilisation",
  idle_us: "GPU idle time",
  kernel_time_us: "kernel time",
  kernel_count: "kernel launches",
  gpu_busy_us: "GPU busy time",
  gpu_idle_us: "GPU idle time",
  communication_us: "communication time",
  memory_us: "memory copy/set time",
  launch_latency_p50_us: "launch latency (median)",
  events: "events in the trace",
};

function fmt(metric, v) {
  if (v === null || v === undefined) return "–";
  if (metric.endsWith("_us")) return us(v);
  if (metric.endsWith("_pct")) return pct(v);
  return num(v);
}

/** The change, with a glyph and a word as well as a colour (better/worse). */
function delta(metric, diff, change) {
  if (diff === null || diff === undefined || diff === 0) return el("span", { class: "muted" }, "no change");
  const worse = HIGHER_IS_BETTER.has(metric) ? diff < 0 : diff > 0;
  const text = `${diff > 0 ? "+" : "−"}${fmt(metric, Math.abs(diff))}${change === null || change === undefined ? "" : ` (${change > 0 ? "+" : ""}${num(change)} %)`}`;
  return el("span", { class: worse ? "delta-worse" : "delta-better", title: worse ? "worse" : "better" }, text, el("span", { class: "hidden" }, worse ? " worse" : " better"));
}

function kernelDelta(r) {
  const d = r.diff_total_us;
  if (!d) return el("span", { class: "muted" }, "=");
  return el("span", { class: d > 0 ? "delta-worse" : "delta-better" }, `${d > 0 ? "+" : "−"}${us(Math.abs(d))}`);
}

function section(title, note, ...content) {
  return el("section", { class: "panel wide" }, el("div", { class: "panel-head" }, el("h2", {}, title)), note ? el("p", { class: "note" }, note) : null, content);
}

function render(c, names, ids) {
  const summary = c.summary || [];
  const stepOptions = Array.from({ length: Math.max(0, Math.min(c.base.steps || 0, c.test.steps || 0)) }, (_, i) => i);
  const stepSelect = el("select", { id: "cmp-step", "aria-label": "step to align the timelines at" }, stepOptions.map((i) => el("option", { value: i }, `step #${i + 1}`)));
  const baseLink = el("a", { class: "button", id: "cmp-base-timeline" }, `${names.base} timeline`);
  const testLink = el("a", { class: "button", id: "cmp-test-timeline" }, `${names.test} timeline`);
  const setLinks = () => {
    const step = stepSelect.value || "";
    baseLink.href = `${base}jobs/${encodeURIComponent(ids.base)}/timeline?trace=${ids.baseTrace}${step !== "" ? `&step=${step}` : ""}`;
    testLink.href = `${base}jobs/${encodeURIComponent(ids.test)}/timeline?trace=${ids.testTrace}${step !== "" ? `&step=${step}` : ""}`;
  };
  stepSelect.addEventListener("change", setLinks);
  setLinks();
  const kernels = c.kernels || [];
  const ops = c.ops || [];
  fill(
    body,
    el(
      "div",
      { class: "panels" },
      section(
        "At a glance",
        `${names.base} (base) against ${names.test} (test). ▲ worse, ▼ better.`,
        dataTable(
          [
            { label: "metric", get: (r) => LABELS[r.metric] || r.metric },
            { label: names.base, num: true, get: (r) => fmt(r.metric, r.base) },
            { label: names.test, num: true, get: (r) => fmt(r.metric, r.test) },
            { label: "change", num: true, get: (r) => delta(r.metric, r.diff, r.pct) },
          ],
          summary,
        ),
        el("div", { class: "toolbar" }, el("label", {}, "Align timelines at ", stepSelect), baseLink, testLink),
      ),
      section(
        "Kernel time by kernel",
        "Sorted by impact: the largest change in total time first.",
        el("div", { id: "cmp-kernel-bars" }),
        dataTable(
          [
            { label: "kernel", get: (r) => el("span", { class: "mono" }, r.name) },
            { label: "launches", num: true, get: (r) => `${count(r.base_count)} → ${count(r.test_count)}` },
            { label: names.base, num: true, get: (r) => us(r.base_total_us) },
            { label: names.test, num: true, get: (r) => us(r.test_total_us) },
            { label: "change", num: true, get: kernelDelta },
            { label: "%", num: true, get: (r) => (r.pct === null || r.pct === undefined ? "new" : `${r.pct > 0 ? "+" : ""}${num(r.pct)} %`) },
          ],
          kernels.slice(0, 40),
        ),
      ),
      section(
        "CPU operators",
        "Sorted by impact.",
        dataTable(
          [
            { label: "operator", get: (r) => el("span", { class: "mono" }, r.name) },
            { label: "calls", num: true, get: (r) => `${count(r.base_count)} → ${count(r.test_count)}` },
            { label: names.base, num: true, get: (r) => us(r.base_total_us) },
            { label: names.test, num: true, get: (r) => us(r.test_total_us) },
            { label: "change", num: true, get: kernelDelta },
          ],
          ops.slice(0, 40),
        ),
      ),
      section(
        "Added and gone",
        null,
        el("div", { class: "kpis" }, el("div", {}, el("span", {}, `only in ${names.test}`), el("b", { class: "big", id: "cmp-added" }, count((c.added || []).length))), el("div", {}, el("span", {}, `only in ${names.base}`), el("b", { class: "big", id: "cmp-removed" }, count((c.removed || []).length)))),
        el("details", {}, el("summary", {}, "names"), el("p", {}, el("b", {}, "added: "), (c.added || []).join(", ") || "none"), el("p", {}, el("b", {}, "gone: "), (c.removed || []).join(", ") || "none")),
      ),
    ),
  );
  barList(
    document.getElementById("cmp-kernel-bars"),
    kernels.filter((r) => r.diff_total_us).slice(0, 12).map((r) => ({ label: r.name, value: Math.abs(r.diff_total_us || 0), text: `${r.diff_total_us > 0 ? "+" : "−"}${us(Math.abs(r.diff_total_us || 0))}`, colorIndex: r.diff_total_us > 0 ? 5 : 0 })),
  );
}

async function compare() {
  const ids = { base: baseSelect.value, test: testSelect.value, baseTrace: Number(query().base_trace) || 0, testTrace: Number(query().test_trace) || 0 };
  if (!ids.base || !ids.test) {
    fill(body, el("p", { class: "muted" }, "Pick a base job and a test job."));
    return;
  }
  setQuery({ base: ids.base, test: ids.test, base_trace: ids.baseTrace || "", test_trace: ids.testTrace || "" });
  fill(body, el("p", { class: "muted" }, "Comparing…"));
  const names = { base: baseSelect.selectedOptions[0].textContent, test: testSelect.selectedOptions[0].textContent };
  if (names.base === names.test) [names.base, names.test] = [`${names.base} (base)`, `${names.test} (test)`];
  try {
    const answer = await api(`compare?base=${encodeURIComponent(ids.base)}&test=${encodeURIComponent(ids.test)}&base_trace=${ids.baseTrace}&test_trace=${ids.testTrace}`);
    render(answer.compare, names, ids);
    body.dataset.ready = "true";
  } catch (error) {
    fill(body, errorBox(error));
  }
}

async function start() {
  const q = query();
  let jobs;
  try {
    jobs = (await api("jobs")).items.filter((j) => j.status === "Ready");
  } catch (error) {
    fill(body, errorBox(error));
    return;
  }
  for (const select of [baseSelect, testSelect]) {
    fill(select, el("option", { value: "" }, "choose a job"), jobs.map((j) => el("option", { value: j.job_id }, j.name || j.job_id)));
  }
  baseSelect.value = q.base || "";
  testSelect.value = q.test || "";
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    compare();
  });
  compare();
}

start();
