// The dashboard's rules panel: `GET api/jobs/{id}/rules` (the engine's results, live while the
// job runs) as one card per rule: status, reason, findings with their figures and a link that
// opens the timeline at the finding's time range, the recommendation, and the report's link.
// Its own module and section, beside the panels dashboard.js draws. While the results are not
// final it reads them again every few seconds.
import { api, base, el, errorBox, fill, jobId, poll, statusBadge, when } from "./common.js";

const LIVE_MS = 5000;
const node = document.getElementById("rules-panel");
const jobPath = `jobs/${encodeURIComponent(jobId)}`;
let final = false;

/** The timeline at [start_ns, end_ns) with a margin of a quarter of the range on each side. */
export function timelineHref(startNs, endNs) {
  const margin = Math.max((endNs - startNs) / 4, 1e6);
  const params = new URLSearchParams({ t0us: String((startNs - margin) / 1000), t1us: String((endNs + margin) / 1000) });
  return `${base}${jobPath}/timeline?${params}`;
}

function figures(obj) {
  const entries = Object.entries(obj || {}).filter(([, v]) => v !== null && typeof v !== "object");
  if (!entries.length) return null;
  return el("dl", { class: "rule-figures" }, entries.map(([k, v]) => [el("dt", {}, k), el("dd", {}, String(v))]));
}

/** A model rule's finding: its step range on the Model page (the tensor picked, the steps outlined). */
function steps(f) {
  if (f.step_start === undefined || f.step_start === null) return null;
  const params = new URLSearchParams({ steps: `${f.step_start}-${f.step_end}` });
  if ((f.tensors || []).length) params.set("tensor", f.tensors[0]);
  return el("a", { class: "rule-range rule-steps", href: `${base}${jobPath}/model?${params}`, title: "open the Model page at these steps" }, `steps ${f.step_start}–${f.step_end}`);
}

function range(f) {
  if (f.start_ns === null || f.start_ns === undefined) return null;
  const ms = ((f.end_ns - f.start_ns) / 1e6).toFixed(1);
  const at = new Date(f.start_ns / 1e6).toISOString().slice(11, 23);
  return el("a", { class: "rule-range", href: timelineHref(f.start_ns, f.end_ns), title: "open the timeline here" }, `${at} UTC · ${ms} ms`);
}

function finding(f) {
  return el(
    "li",
    { class: "rule-finding" },
    el("span", { class: "rule-message" }, f.message),
    " ",
    steps(f),
    " ",
    range(f),
    f.evidence ? el("span", { class: "muted" }, ` evidence: ${f.evidence}`) : null,
    figures(f.figures),
  );
}

/** A rule short of data (a CPU job's GPU rules) is an `Error` in the API, but no alarm: a grey
 * "No data" badge, its reason saying what the job lacks. */
function badge(rule) {
  if (rule.status !== "Error" || !rule.missing_data) return statusBadge(rule.status);
  return el("span", { class: "status status-NoData", title: "the job has no data this rule reads" }, "No data");
}

function card(rule) {
  const findings = rule.findings || [];
  const more = (rule.finding_count || findings.length) - findings.length;
  const noData = rule.status === "Error" && Boolean(rule.missing_data);
  return el(
    "article",
    {
      class: `rule-card rule-${noData ? "NoData" : rule.status}`,
      dataset: { rule: rule.rule, status: rule.status, missingData: String(noData) },
    },
    el("header", {}, el("h3", {}, rule.rule), " ", badge(rule)),
    el("p", { class: "rule-reason" }, rule.reason || ""),
    findings.length ? el("ol", { class: "rule-findings" }, findings.map(finding)) : null,
    more > 0 ? el("p", { class: "muted" }, `and ${more} more finding(s)`) : null,
    rule.recommendation ? el("p", { class: "rule-recommendation" }, el("b", {}, "Recommendation: "), rule.recommendation) : null,
    (rule.rules || []).length ? el("div", { class: "rule-members" }, rule.rules.map(card)) : null,
  );
}

async function load() {
  let data;
  try {
    data = await api(`${jobPath}/rules`);
  } catch (error) {
    fill(node, el("h2", { id: "rules-title" }, "Rules"), errorBox(error));
    return;
  }
  final = Boolean(data.final);
  const rules = data.rules || [];
  fill(
    node,
    el(
      "header",
      { class: "rules-head" },
      el("h2", { id: "rules-title" }, "Rules"),
      " ",
      badge({ status: data.status || "InProgress", missing_data: rules.length > 0 && rules.every((r) => r.missing_data) }),
      el("span", { class: "muted" }, final ? " final · evaluated " : " live, on what has streamed so far · evaluated ", when(data.evaluated_at)),
      el("span", { class: "grow" }),
      final ? el("a", { class: "button", id: "rules-report", href: `${base}api/${jobPath}/report` }, "Profiling report") : null,
    ),
    rules.length ? el("div", { class: "rule-cards" }, rules.map(card)) : el("p", { class: "muted" }, "No rule has been evaluated yet."),
  );
  node.dataset.ready = "true";
  node.dataset.final = String(final);
}

if (node) poll(load, LIVE_MS, () => !final);
