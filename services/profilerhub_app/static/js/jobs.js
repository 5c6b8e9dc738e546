// The jobs page: the owner's jobs, one page at a time, sorted, filtered (name, status) and paged
// by the hub (`api/jobs?limit=&next_token=&sort=&order=&name_contains=&status=`), so thousands of
// jobs cost one small page. The URL keeps filter, sort and page size. While any job is still
// InProgress/Processing the page refreshes itself every few seconds (slower once all are final).
import { api, base, bytes, count, el, errorBox, fill, query, seconds, setQuery, statusBadge, when } from "./common.js";

const PAGE_SIZES = [25, 50, 100];
const LIVE_MS = 3000;
const IDLE_MS = 30000;
const FINAL = new Set(["Ready", "Failed"]);
const STATUSES = ["InProgress", "Processing", "Ready", "Failed"];

// `sort`: the hub's sort key (the hub sorts, filters and pages in SQL). Duration, steps, GPUs and
// ranks are on the hub's job row (written by ingest), so they sort too, jobs without them (not Ready
// yet) last either way; the stored size is read from each job's folder for the page shown only.
const COLUMNS = [
  { key: "pick", label: "" },
  { key: "name", label: "Name", sort: "name" },
  { key: "status", label: "Status", sort: "status" },
  { key: "created_at", label: "Started", sort: "created_at" },
  { key: "finished_at", label: "Finished", sort: "updated_at" },
  { key: "duration_s", label: "Duration", num: true, sort: "duration_s" },
  { key: "steps", label: "Steps", num: true, sort: "steps" },
  { key: "gpus", label: "GPUs", num: true, sort: "gpus" },
  { key: "ranks", label: "Ranks", num: true, sort: "ranks" },
  { key: "bytes", label: "Stored", num: true },
];

const table = document.getElementById("jobs-table");
const pager = document.getElementById("jobs-pager");
const nameInput = document.getElementById("filter-name");
const statusSelect = document.getElementById("filter-status");
const live = document.getElementById("jobs-live");
const compareButton = document.getElementById("compare-selected");

const initial = query();
const state = {
  page: null, // the hub's answer for the page shown: items, next_token, total, status_counts
  q: initial.q || "",
  status: STATUSES.includes(initial.status) ? initial.status : "",
  sort: COLUMNS.some((c) => c.sort && c.sort === initial.sort) ? initial.sort : "created_at",
  dir: initial.dir === "asc" ? "asc" : "desc",
  size: PAGE_SIZES.includes(Number(initial.size)) ? Number(initial.size) : PAGE_SIZES[0],
  tokens: [null], // next_token of each page walked so far (page 1 has none)
  picked: new Map(), // job id -> name, kept across pages
};
nameInput.value = state.q;
statusSelect.value = state.status;

function header() {
  return el(
    "tr",
    {},
    COLUMNS.map((col) => {
      if (col.key === "pick") return el("th", { scope: "col" }, el("span", { class: "sr-only" }, "compare"));
      if (!col.sort) return el("th", { scope: "col", class: col.num ? "num" : "" }, col.label);
      const sorted = state.sort === col.sort;
      return el(
        "th",
        {
          scope: "col",
          class: col.num ? "num" : "",
          "aria-sort": sorted ? (state.dir === "asc" ? "ascending" : "descending") : "none",
        },
        el(
          "button",
          {
            type: "button",
            class: "sort",
            "data-sort": col.sort,
            onclick: () => {
              if (state.sort === col.sort) state.dir = state.dir === "asc" ? "desc" : "asc";
              // times newest first, figures largest first, names and statuses A to Z
              else [state.sort, state.dir] = [col.sort, col.key.endsWith("_at") || col.num ? "desc" : "asc"];
              restart();
            },
          },
          col.label,
        ),
      );
    }),
  );
}

function row(job) {
  const ready = job.status === "Ready";
  const name = job.name || job.job_id;
  const picked = state.picked.has(job.job_id);
  return el(
    "tr",
    { "data-job": job.job_id, "data-status": job.status },
    el(
      "td",
      {},
      el("input", {
        type: "checkbox",
        "aria-label": `select ${name} to compare`,
        checked: picked,
        disabled: !ready,
        onchange: (event) => {
          if (event.target.checked) state.picked.set(job.job_id, name);
          else state.picked.delete(job.job_id);
          updateCompare();
        },
      }),
    ),
    el(
      "td",
      { class: "name" },
      ready || job.status === "Failed" || job.has_summary
        ? el("a", { href: `${base}jobs/${encodeURIComponent(job.job_id)}` }, name)
        : name,
      el("div", { class: "muted mono" }, job.job_id),
    ),
    el(
      "td",
      {},
      statusBadge(job.status),
      job.failure_reason ? el("div", { class: "reason" }, job.failure_reason) : null,
      warnings(job.warnings),
      FINAL.has(job.status) ? null : progressLine(job),
    ),
    el("td", {}, when(job.created_at)),
    el("td", {}, FINAL.has(job.status) ? when(job.finished_at) : el("span", { class: "muted" }, "running")),
    el("td", { class: "num" }, seconds(job.duration_s)),
    el("td", { class: "num" }, count(job.steps)),
    el("td", { class: "num" }, count(job.gpus)),
    el("td", { class: "num" }, count(job.ranks)),
    el("td", { class: "num" }, bytes(job.bytes)),
  );
}

/** How far a job that is not final has come: its upload while it runs, then its ingest, trace by
 * trace (a fanned-out ingest's progress: traces and their stored bytes), growing with each refresh. */
function progressLine(job) {
  const p = job.progress;
  if (job.status === "Processing" && p && p.traces) {
    return el(
      "div",
      { class: "muted progress", dataset: { ingest: `${p.traces_done}/${p.traces}` } },
      el("progress", { max: p.traces, value: p.traces_done, "aria-label": "traces ingested" }),
      ` ${count(p.traces_done)} of ${count(p.traces)} traces · ${bytes(p.bytes_done)} of ${bytes(p.bytes)} ingested`,
    );
  }
  if (job.status === "Processing") return el("div", { class: "muted progress" }, "ingesting");
  if (job.completed_at) {
    // the hub's word on where it waits: its owner's fair share, or no ingest worker yet
    const why = job.status_reason || "Queued: uploaded, waiting for an ingest worker";
    return el("div", { class: "muted progress", dataset: { waiting: "" } }, why);
  }
  return el("div", { class: "muted progress" }, `${count(job.raw_files)} files · ${bytes(job.bytes)} so far`);
}

/** A Ready job's warnings (files left out) or a Failed job's parts that could still be read. */
function warnings(list) {
  if (!list || !list.length) return null;
  return el(
    "details",
    { class: "warnings" },
    el("summary", {}, `⚠ ${list.length} warning${list.length === 1 ? "" : "s"}`),
    el("ul", {}, list.map((w) => el("li", {}, w))),
  );
}

function updateCompare() {
  compareButton.disabled = state.picked.size !== 2;
  compareButton.textContent =
    state.picked.size === 2 ? `Compare ${[...state.picked.values()].join(" and ")}` : `Compare selected (${state.picked.size}/2)`;
}

function showCounts(counts) {
  const all = Object.values(counts).reduce((a, b) => a + b, 0);
  for (const option of statusSelect.options) {
    const n = option.value ? counts[option.value] || 0 : all;
    option.textContent = `${option.value || "any"} (${count(n)})`;
  }
}

function render() {
  const page = state.page;
  const index = state.tokens.length; // 1-based number of the page shown
  const pages = Math.max(1, Math.ceil(page.total / state.size));
  setQuery({
    q: state.q,
    status: state.status,
    sort: state.sort === "created_at" ? "" : state.sort,
    dir: state.dir === "desc" ? "" : state.dir,
    size: state.size === PAGE_SIZES[0] ? "" : state.size,
  });
  showCounts(page.status_counts || {});
  const owned = Object.values(page.status_counts || {}).reduce((a, b) => a + b, 0);
  if (!owned && !state.q) {
    fill(
      table,
      el(
        "div",
        { class: "empty-state" },
        el("p", {}, el("b", {}, "No jobs yet.")),
        el("p", { class: "muted" }, "Profile a training run with the ProfilerHub SDK (`import profilerhub as ph; ph.init(job=…)`); it appears here while it runs."),
      ),
    );
    fill(pager);
    return;
  }
  fill(
    table,
    el(
      "table",
      { id: "jobs" },
      el("caption", { class: "sr-only" }, "Jobs"),
      el("thead", {}, header()),
      el("tbody", {}, page.items.length ? page.items.map(row) : el("tr", {}, el("td", { colspan: COLUMNS.length, class: "muted" }, "No job matches the filter."))),
    ),
  );
  const sizes = el(
    "select",
    { id: "page-size", "aria-label": "jobs per page" },
    PAGE_SIZES.map((n) => el("option", { value: n, selected: n === state.size }, `${n} a page`)),
  );
  sizes.addEventListener("change", () => {
    state.size = Number(sizes.value);
    restart();
  });
  fill(
    pager,
    el("button", { type: "button", id: "page-first", disabled: index <= 1, onclick: () => go([null]), "aria-label": "first page" }, "« First"),
    el("button", { type: "button", id: "page-prev", disabled: index <= 1, onclick: () => go(state.tokens.slice(0, -1)), "aria-label": "previous page" }, "‹ Prev"),
    el("span", { id: "page-info" }, `Page ${count(index)} of ${count(pages)} · ${count(page.total)} job${page.total === 1 ? "" : "s"}`),
    el("button", { type: "button", id: "page-next", disabled: !page.next_token, onclick: () => go([...state.tokens, page.next_token]), "aria-label": "next page" }, "Next ›"),
    sizes,
  );
  updateCompare();
}

function listQuery() {
  const params = new URLSearchParams({ limit: String(state.size), sort: state.sort, order: state.dir });
  if (state.q.trim()) params.set("name_contains", state.q.trim());
  if (state.status) params.set("status", state.status);
  const token = state.tokens[state.tokens.length - 1];
  if (token) params.set("next_token", token);
  return params;
}

let asked = 0; // the newest request wins (typing in the filter sends several)
let timer = null;

async function load() {
  const mine = ++asked;
  const answer = await api(`jobs?${listQuery()}`);
  if (mine !== asked) return null;
  state.page = answer;
  for (const job of answer.items) if (job.status !== "Ready") state.picked.delete(job.job_id);
  render();
  const counts = answer.status_counts || {};
  const running = (counts.InProgress || 0) + (counts.Processing || 0);
  live.textContent = running ? `${count(running)} running · updating every ${LIVE_MS / 1000} s` : "";
  return running > 0;
}

async function refresh() {
  clearTimeout(timer);
  let running = false;
  try {
    const answer = await load();
    if (answer === null) return; // a newer request took over
    running = answer;
  } catch (error) {
    fill(table, errorBox(error));
  }
  timer = setTimeout(refresh, running ? LIVE_MS : IDLE_MS);
}

/** Show the page after the tokens walked so far (`[null]` = the first page). */
function go(tokens) {
  state.tokens = tokens;
  refresh();
}

let typing = null;

/** Sort or filter changed: back to the first page (with the name filter as typed so far). */
function restart() {
  clearTimeout(typing);
  state.q = nameInput.value;
  go([null]);
}

nameInput.addEventListener("input", () => {
  clearTimeout(typing);
  typing = setTimeout(restart, 200);
});
statusSelect.addEventListener("change", () => {
  state.status = statusSelect.value;
  restart();
});
document.getElementById("job-filters").addEventListener("submit", (event) => event.preventDefault());
compareButton.addEventListener("click", () => {
  const [a, b] = [...state.picked.keys()];
  location.href = `${base}compare?base=${encodeURIComponent(a)}&test=${encodeURIComponent(b)}`;
});

refresh();
