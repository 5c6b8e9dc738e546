// The jobs page: the owner's jobs, sortable, filterable by name and status, paginated; the URL
// keeps filter, sort and page. While a job is still InProgress/Processing the list refreshes
// itself every few seconds (slower once every job is final, to pick up new runs).
import { api, base, bytes, count, el, errorBox, fill, query, seconds, setQuery, statusBadge, when } from "./common.js";

const PAGE_SIZE = 25;
const LIVE_MS = 3000;
const IDLE_MS = 30000;
const FINAL = new Set(["Ready", "Failed"]);

const COLUMNS = [
  { key: "pick", label: "", sortable: false },
  { key: "name", label: "Name" },
  { key: "status", label: "Status" },
  { key: "first_upload_at", label: "Started" },
  { key: "duration_s", label: "Duration", num: true },
  { key: "steps", label: "Steps", num: true },
  { key: "gpus", label: "GPUs", num: true },
  { key: "ranks", label: "Ranks", num: true },
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
  jobs: [],
  q: initial.q || "",
  status: initial.status || "",
  sort: initial.sort || "first_upload_at",
  dir: initial.dir === "asc" ? "asc" : "desc",
  page: Math.max(1, Number(initial.page) || 1),
  picked: new Set(),
};
nameInput.value = state.q;
statusSelect.value = state.status;

function compareValues(a, b) {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1; // blanks last either way
  if (b === null || b === undefined) return -1;
  return typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b));
}

function visibleJobs() {
  const q = state.q.trim().toLowerCase();
  const rows = state.jobs.filter(
    (job) =>
      (!q || (job.name || "").toLowerCase().includes(q) || job.job_id.includes(q)) &&
      (!state.status || job.status === state.status),
  );
  const sign = state.dir === "asc" ? 1 : -1;
  rows.sort((a, b) => {
    const av = a[state.sort];
    const bv = b[state.sort];
    if (av === null || av === undefined || bv === null || bv === undefined) return compareValues(av, bv);
    return sign * compareValues(av, bv);
  });
  return rows;
}

function header() {
  return el(
    "tr",
    {},
    COLUMNS.map((col) => {
      if (col.sortable === false) return el("th", { scope: "col" }, el("span", { class: "hidden" }, "pick"));
      const sorted = state.sort === col.key;
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
            "data-sort": col.key,
            onclick: () => {
              if (state.sort === col.key) state.dir = state.dir === "asc" ? "desc" : "asc";
              else [state.sort, state.dir] = [col.key, col.num || col.key === "first_upload_at" ? "desc" : "asc"];
              render();
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
          if (event.target.checked) state.picked.add(job.job_id);
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
      // a run still going: how much has arrived so far (grows with each refresh)
      FINAL.has(job.status) ? null : el("div", { class: "muted progress" }, `${count(job.raw_files)} files · ${bytes(job.bytes)} so far`),
    ),
    el("td", {}, when(job.first_upload_at)),
    el("td", { class: "num" }, seconds(job.duration_s)),
    el("td", { class: "num" }, count(job.steps)),
    el("td", { class: "num" }, count(job.gpus)),
    el("td", { class: "num" }, count(job.ranks)),
    el("td", { class: "num" }, bytes(job.bytes)),
  );
}

function updateCompare() {
  compareButton.disabled = state.picked.size !== 2;
  compareButton.textContent = state.picked.size === 2 ? "Compare selected" : `Compare selected (${state.picked.size}/2)`;
}

function render() {
  const rows = visibleJobs();
  const pages = Math.max(1, Math.ceil(rows.length / PAGE_SIZE));
  state.page = Math.min(state.page, pages);
  setQuery({
    q: state.q,
    status: state.status,
    sort: state.sort === "first_upload_at" ? "" : state.sort,
    dir: state.dir === "desc" ? "" : state.dir,
    page: state.page > 1 ? state.page : "",
  });
  if (!state.jobs.length) {
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
  const shown = rows.slice((state.page - 1) * PAGE_SIZE, state.page * PAGE_SIZE);
  fill(
    table,
    el(
      "table",
      { id: "jobs" },
      el("caption", { class: "hidden" }, "Jobs"),
      el("thead", {}, header()),
      el("tbody", {}, shown.length ? shown.map(row) : el("tr", {}, el("td", { colspan: COLUMNS.length, class: "muted" }, "No job matches the filter."))),
    ),
  );
  const go = (page) => () => {
    state.page = page;
    render();
  };
  fill(
    pager,
    el("button", { type: "button", disabled: state.page <= 1, onclick: go(state.page - 1), "aria-label": "previous page" }, "‹ Prev"),
    el("span", { id: "page-info" }, `Page ${state.page} of ${pages} · ${count(rows.length)} job${rows.length === 1 ? "" : "s"}`),
    el("button", { type: "button", disabled: state.page >= pages, onclick: go(state.page + 1), "aria-label": "next page" }, "Next ›"),
  );
  updateCompare();
}

async function load() {
  const answer = await api("jobs");
  state.jobs = answer.items;
  const known = new Set(state.jobs.filter((j) => j.status === "Ready").map((j) => j.job_id));
  for (const id of [...state.picked]) if (!known.has(id)) state.picked.delete(id);
  render();
  const running = state.jobs.filter((j) => !FINAL.has(j.status)).length;
  live.textContent = running ? `${running} running · updating every ${LIVE_MS / 1000} s` : "";
  return running > 0;
}

async function refresh() {
  let running = false;
  try {
    running = await load();
  } catch (error) {
    fill(table, errorBox(error));
  }
  setTimeout(refresh, running ? LIVE_MS : IDLE_MS);
}

let typing = null;
nameInput.addEventListener("input", () => {
  clearTimeout(typing);
  typing = setTimeout(() => {
    state.q = nameInput.value;
    state.page = 1;
    render();
  }, 120);
});
statusSelect.addEventListener("change", () => {
  state.status = statusSelect.value;
  state.page = 1;
  render();
});
document.getElementById("job-filters").addEventListener("submit", (event) => event.preventDefault());
compareButton.addEventListener("click", () => {
  const [a, b] = [...state.picked];
  location.href = `${base}compare?base=${encodeURIComponent(a)}&test=${encodeURIComponent(b)}`;
});

refresh();
