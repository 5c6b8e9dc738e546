// The compare page: two jobs (or two ranks of one) side by side, from `GET api/compare`
// (`profilerhub compare`'s JSON): the headline figures with their change, kernels and CPU ops
// by impact, what was added or is gone, and both timelines one above the other, aligned at a
// chosen step (each the timeline page itself, framed with ?embed=1, over the same time width).
import { barList, dataTable } from "./charts.js";
import { api, base, count, el, errorBox, fill, num, pct, query, setQuery, us } from "./common.js";

const baseSelect = document.getElementById("cmp-base");
const testSelect = document.getElementById("cmp-test");
const baseRank = document.getElementById("cmp-base-rank");
const testRank = document.getElementById("cmp-test-rank");
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
// Extra room around the aligned step, as a share of the window.
const MARGIN = 0.03;

function fmt(metric, v) {
  if (v === null || v === undefined) return "–";
  if (metric.endsWith("_us")) return us(v);
  if (metric.endsWith("_pct")) return pct(v);
  return num(v);
}

/** A difference of percentages, in percentage points (small ones with two significant digits). */
function points(v) {
  return Math.abs(v) < 1 ? `${Number(Math.abs(v).toPrecision(2))} pp` : `${num(Math.abs(v))} pp`;
}

function changeText(change) {
  return change === null || change === undefined ? "" : ` (${change > 0 ? "+" : ""}${num(change)} %)`;
}

/** The change, with a glyph and a word as well as a colour (better/worse). */
function delta(metric, diff, change) {
  if (diff === null || diff === undefined || diff === 0) return el("span", { class: "muted" }, "no change");
  const worse = HIGHER_IS_BETTER.has(metric) ? diff < 0 : diff > 0;
  const size = metric.endsWith("_pct") ? points(diff) : fmt(metric, Math.abs(diff));
  return el(
    "span",
    { class: worse ? "delta-worse" : "delta-better", title: worse ? "worse" : "better" },
    `${diff > 0 ? "+" : "−"}${size}${changeText(change)}`,
    el("span", { class: "sr-only" }, worse ? " worse" : " better"),
  );
}

function kernelDelta(r) {
  const d = r.diff_total_us;
  if (!d) return el("span", { class: "muted" }, "=");
  const worse = d > 0;
  return el("span", { class: worse ? "delta-worse" : "delta-better", title: worse ? "slower" : "faster" }, `${worse ? "+" : "−"}${us(Math.abs(d))}`, el("span", { class: "sr-only" }, worse ? " slower" : " faster"));
}

function share(r) {
  if (r.pct === null || r.pct === undefined) return r.base_count ? "gone" : "new";
  return `${r.pct > 0 ? "+" : ""}${num(r.pct)} %`;
}

function section(title, note, ...content) {
  return el("section", { class: "panel wide" }, el("div", { class: "panel-head" }, el("h2", {}, title)), note ? el("p", { class: "note" }, note) : null, content);
}

/** The timeline page of one side, framed, showing [start, end] (ns from its trace's origin). */
function timelineSrc(side, range) {
  const params = new URLSearchParams({ trace: String(Math.max(0, side.trace)), embed: "1" });
  if (range) {
    params.set("start", String(Math.round(range[0])));
    params.set("end", String(Math.round(range[1])));
  }
  return `${base}jobs/${encodeURIComponent(side.job)}/timeline?${params}`;
}

/** Both timelines, one above the other, each showing step n from its start over the same width
 * (the longer of the two steps), so equal durations look equal. */
function timelines(sides, names) {
  if (sides.some((s) => !s.lanes)) {
    return section("Timelines aligned at a step", `No timeline: ${names.filter((_, i) => !sides[i].lanes).join(" and ")} has no trace (SDK files only).`);
  }
  const steps = sides.map((s) => s.lanes.steps || []);
  const n = Math.min(steps[0].length, steps[1].length);
  const stepSelect = el(
    "select",
    { id: "cmp-step", "aria-label": "step to align the timelines at" },
    Array.from({ length: n }, (_, i) => el("option", { value: i }, `step ${steps[0][i].step} / ${steps[1][i].step}`)),
  );
  const frames = sides.map((side, i) =>
    el("iframe", { id: `cmp-tl-${i ? "test" : "base"}`, title: `${names[i]} timeline`, loading: "lazy" }),
  );
  const links = sides.map((side, i) => el("a", { class: "button", id: `cmp-${i ? "test" : "base"}-timeline`, target: "_top" }, `Open ${names[i]} timeline`));
  const note = el("p", { class: "note", id: "cmp-align-note" });
  const align = () => {
    const k = stepSelect.value === "" ? -1 : Number(stepSelect.value);
    if (k < 0) {
      sides.forEach((side, i) => (frames[i].src = timelineSrc(side, null)));
      note.textContent = "No step both runs have: each timeline shows its whole trace.";
    } else {
      const width = Math.max(...steps.map((s) => s[k].end - s[k].start)) / (1 - 2 * MARGIN);
      sides.forEach((side, i) => {
        const start = steps[i][k].start - width * MARGIN;
        frames[i].src = timelineSrc(side, [start, start + width]);
        frames[i].dataset.start = String(Math.round(start));
        frames[i].dataset.width = String(Math.round(width));
      });
      const [a, b] = steps.map((s) => (s[k].end - s[k].start) / 1000);
      note.textContent = `Both start at step ${k + 1}'s start and span ${us(width / 1000)}: ${names[0]}'s step took ${us(a)}, ${names[1]}'s ${us(b)}.`;
    }
    sides.forEach((side, i) => (links[i].href = frames[i].src.replace("&embed=1", "").replace("embed=1&", "")));
  };
  stepSelect.addEventListener("change", align);
  const node = section(
    "Timelines aligned at a step",
    "Each is the full timeline (zoom, pan, click and search work in each); both start at the chosen step and share one time width.",
    el("div", { class: "toolbar" }, n ? el("label", {}, "Align at ", stepSelect) : null, links),
    note,
    el(
      "div",
      { class: "cmp-timelines" },
      sides.map((side, i) => el("figure", {}, el("figcaption", {}, `${i ? "test" : "base"}: ${names[i]}`), frames[i])),
    ),
  );
  node.id = "cmp-timelines";
  requestAnimationFrame(align);
  return node;
}

function render(c, names, sides) {
  const summary = c.summary || [];
  const kernels = c.kernels || [];
  const ops = c.ops || [];
  fill(
    body,
    el(
      "div",
      { class: "panels" },
      section(
        "At a glance",
        `${names[0]} (base) against ${names[1]} (test). ▲ worse, ▼ better; utilisation changes in percentage points (pp).`,
        dataTable(
          [
            { label: "metric", get: (r) => LABELS[r.metric] || r.metric },
            { label: names[0], num: true, get: (r) => fmt(r.metric, r.base) },
            { label: names[1], num: true, get: (r) => fmt(r.metric, r.test) },
            { label: "change", num: true, get: (r) => delta(r.metric, r.diff, r.pct) },
          ],
          summary,
        ),
      ),
      section(
        "Kernel time by kernel",
        "Sorted by impact: the largest change in total time first. ▲ slower, ▼ faster.",
        el("div", { id: "cmp-kernel-bars" }),
        dataTable(
          [
            { label: "kernel", get: (r) => el("span", { class: "mono" }, r.name) },
            { label: "launches", num: true, get: (r) => `${count(r.base_count)} → ${count(r.test_count)}` },
            { label: names[0], num: true, get: (r) => us(r.base_total_us) },
            { label: names[1], num: true, get: (r) => us(r.test_total_us) },
            { label: "change", num: true, get: kernelDelta },
            { label: "%", num: true, get: share },
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
            { label: names[0], num: true, get: (r) => us(r.base_total_us) },
            { label: names[1], num: true, get: (r) => us(r.test_total_us) },
            { label: "change", num: true, get: kernelDelta },
          ],
          ops.slice(0, 40),
        ),
      ),
      section(
        "Added and gone",
        "Kernels and operators that ran in only one of the two.",
        el("div", { class: "kpis" }, el("div", {}, el("span", {}, `only in ${names[1]}`), el("b", { class: "big", id: "cmp-added" }, count((c.added || []).length))), el("div", {}, el("span", {}, `only in ${names[0]}`), el("b", { class: "big", id: "cmp-removed" }, count((c.removed || []).length)))),
        el("details", {}, el("summary", {}, "names"), el("p", {}, el("b", {}, "added: "), (c.added || []).join(", ") || "none"), el("p", {}, el("b", {}, "gone: "), (c.removed || []).join(", ") || "none")),
      ),
      timelines(sides, names),
    ),
  );
  barList(
    document.getElementById("cmp-kernel-bars"),
    kernels.filter((r) => r.diff_total_us).slice(0, 12).map((r) => ({ label: r.name, value: Math.abs(r.diff_total_us || 0), text: `${r.diff_total_us > 0 ? "▲ +" : "▼ −"}${us(Math.abs(r.diff_total_us || 0))}`, colorIndex: r.diff_total_us > 0 ? 5 : 0 })),
  );
}

/** A job's ranks in its rank picker (hidden for a one-trace job); `wanted`: the trace to pick. */
async function fillRanks(select, jobId, wanted) {
  const label = select.parentElement;
  fill(select, el("option", { value: "0" }, "rank 0"));
  select.value = "0";
  label.classList.add("hidden");
  if (!jobId) return;
  const ranks = (await api(`jobs/${encodeURIComponent(jobId)}/ranks`)).ranks || [];
  if (ranks.length < 2) return;
  fill(select, ranks.map((r) => el("option", { value: r.index }, `rank ${r.rank}`)), el("option", { value: "-1" }, "all ranks"));
  select.value = ranks.some((r) => r.index === wanted) || wanted === -1 ? String(wanted) : "0";
  label.classList.remove("hidden");
}

function sideName(select, rankSelect) {
  const job = select.selectedOptions[0].textContent;
  return rankSelect.parentElement.classList.contains("hidden") ? job : `${job} ${rankSelect.selectedOptions[0].textContent}`;
}

async function compare() {
  const sides = [
    { job: baseSelect.value, trace: Number(baseRank.value) || 0 },
    { job: testSelect.value, trace: Number(testRank.value) || 0 },
  ];
  if (!sides[0].job || !sides[1].job) {
    fill(body, el("p", { class: "muted" }, "Pick a base job and a test job (or one job twice, with two ranks)."));
    return;
  }
  setQuery({ base: sides[0].job, test: sides[1].job, base_trace: sides[0].trace || "", test_trace: sides[1].trace || "" });
  fill(body, el("p", { class: "muted" }, "Comparing…"));
  delete body.dataset.ready;
  const names = [sideName(baseSelect, baseRank), sideName(testSelect, testRank)];
  if (names[0] === names[1]) names.splice(0, 2, `${names[0]} (base)`, `${names[1]} (test)`);
  try {
    const [answer, ...lanes] = await Promise.all([
      api(`compare?base=${encodeURIComponent(sides[0].job)}&test=${encodeURIComponent(sides[1].job)}&base_trace=${sides[0].trace}&test_trace=${sides[1].trace}`),
      // a job of SDK files alone has no trace, so no timeline (404): compared without one
      ...sides.map((s) => api(`jobs/${encodeURIComponent(s.job)}/timeline/lanes?trace=${Math.max(0, s.trace)}`).catch(() => null)),
    ]);
    sides.forEach((s, i) => (s.lanes = lanes[i]));
    render(answer.compare, names, sides);
    body.dataset.ready = "true";
  } catch (error) {
    fill(body, errorBox(error));
  }
}

async function start() {
  const q = query();
  let jobs;
  try {
    jobs = (await api("jobs?status=Ready&limit=1000&sort=name&order=asc")).items;
  } catch (error) {
    fill(body, errorBox(error));
    return;
  }
  for (const select of [baseSelect, testSelect]) {
    fill(select, el("option", { value: "" }, "choose a job"), jobs.map((j) => el("option", { value: j.job_id }, j.name || j.job_id)));
  }
  baseSelect.value = q.base || "";
  testSelect.value = q.test || "";
  const ranksOf = async (select, rankSelect, wanted) => {
    try {
      await fillRanks(rankSelect, select.value, wanted);
    } catch (error) {
      fill(body, errorBox(error));
    }
  };
  await Promise.all([ranksOf(baseSelect, baseRank, Number(q.base_trace) || 0), ranksOf(testSelect, testRank, Number(q.test_trace) || 0)]);
  baseSelect.addEventListener("change", () => ranksOf(baseSelect, baseRank, 0));
  testSelect.addEventListener("change", () => ranksOf(testSelect, testRank, testSelect.value === baseSelect.value ? 1 : 0));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    compare();
  });
  compare();
}

start();
