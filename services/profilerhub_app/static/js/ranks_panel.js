// A multi-rank job's panels on the dashboard, from `api/jobs/{id}/ranks` (written once at ingest's
// join: profilerhub_analysis.ranks + rank_activity): the all-ranks overview (one heat-map row per
// rank over the job's wall-clock time, colour = the rank's GPU busy share, white ticks at its step
// starts; a cell opens that rank's timeline at that time) and the ranks table, paged, with the
// stragglers marked and a link comparing the slowest rank with the fastest.
import { dataTable, panel } from "./charts.js";
import { base, count, el, fill, jobId, pct, us } from "./common.js";
import { heatMap } from "./heatmap.js";

/** Rows of the ranks table per page. */
export const RANKS_PER_PAGE = 32;

// The straggler metrics of the engine (profilerhub_analysis.ranks), in words.
const METRIC_WORDS = {
  step_time_us: "step time",
  compute_us: "compute time",
  gpu_busy_us: "GPU busy time",
};

const jobPath = `jobs/${encodeURIComponent(jobId)}`;

/**
 * The ranks' panels: [overview (when the job has one), table], from `answer` (the Promise of the
 * ranks answer, asked beside the dashboard's). `current` is the trace shown, `pickTrace(index)`
 * shows another.
 */
export async function ranksPanels(answer, current, pickTrace) {
  const data = await answer;
  return [data.overview ? overviewPanel(data.overview) : null, tablePanel(data, current, pickTrace)];
}

function overviewPanel(ov) {
  const rows = ov.ranks || [];
  const what = ov.basis === "cpu" ? "CPU operator" : "GPU";
  const cols = Array.from({ length: ov.columns }, (_, c) => `${((c * ov.column_us) / 1e6).toFixed(3)} s`);
  const open = (r, c) => {
    // ± two columns around the cell; the timeline's t0us/t1us are wall-clock µs, as the grid's
    const t0 = ov.start_us + Math.max(0, c - 2) * ov.column_us;
    const t1 = ov.start_us + Math.min(ov.columns, c + 3) * ov.column_us;
    location.href = `${base}${jobPath}/timeline?trace=${rows[r].index}&t0us=${t0.toFixed(3)}&t1us=${t1.toFixed(3)}`;
  };
  const mean = (row) => {
    const known = row.busy_pct.filter((v) => v !== null);
    return known.length ? known.reduce((a, b) => a + b, 0) / known.length : null;
  };
  return panel({
    id: "ranks-overview",
    title: "All ranks over time",
    wide: true,
    note: `Each row is a rank, left to right the job's wall-clock time (${us(ov.column_us * ov.columns)} in ${count(ov.columns)} columns); colour: the share of the column its ${what} was busy (dark: idle, yellow: busy; grey: no data); white ticks: the starts of its profiled steps. Click a cell (or focus the map, move with the arrow keys, press Enter) to open that rank's timeline there.`,
    draw: (node) => {
      const map = heatMap(node, {
        rows: rows.map((r) => `rank ${r.rank}`),
        cols,
        values: rows.map((r) => r.busy_pct),
        log: false,
        domain: [0, 100],
        label: `${what} busy %`,
        colWord: "at",
        cell: rows.length > 32 ? 8 : 12,
        marks: rows.map((r) => r.steps.map((s) => s[0] / ov.column_us)),
        onPick: open,
      });
      map.canvas.id = "ranks-overview-map";
      node.dataset.ranks = String(rows.length);
      node.dataset.columns = String(ov.columns);
    },
    table: () =>
      dataTable(
        [
          { label: "rank", num: true, get: (r) => String(r.rank) },
          { label: "file", get: (r) => r.file },
          { label: `mean ${what} busy`, num: true, get: (r) => pct(mean(r)) },
          { label: "steps", num: true, get: (r) => count(r.steps.length) },
          { label: "first step starts at", num: true, get: (r) => (r.steps.length ? us(r.steps[0][0]) : "–") },
          { label: "last step ends at", num: true, get: (r) => (r.steps.length ? us(r.steps.at(-1)[1]) : "–") },
        ],
        rows,
      ),
  });
}

function tablePanel(data, current, pickTrace) {
  const list = (data.stragglers && data.stragglers.stragglers) || [];
  const stragglers = new Set(list.map((s) => s.rank));
  const rows = data.ranks || [];
  // Compare the worst straggler with the rank of the shortest step time (or rank 0).
  const timed = rows.filter((r) => r.step_time_us !== null && r.step_time_us !== undefined);
  const fastest = timed.length ? timed.reduce((a, b) => (b.step_time_us < a.step_time_us ? b : a)) : rows[0];
  const slow = list.length ? rows.find((r) => r.rank === list[0].rank) : null;
  const pair = slow && fastest && slow.index !== fastest.index ? [fastest, slow] : rows.length > 1 ? [rows[0], rows[1]] : null;
  const compareLink = pair
    ? el(
        "a",
        { class: "button", id: "compare-ranks", href: `${base}compare?base=${encodeURIComponent(jobId)}&test=${encodeURIComponent(jobId)}&base_trace=${pair[0].index}&test_trace=${pair[1].index}` },
        `Compare rank ${pair[0].rank} with rank ${pair[1].rank}`,
      )
    : null;
  const pick = (r) =>
    el(
      "button",
      {
        type: "button",
        class: "ghost rank-pick",
        "aria-pressed": String(r.index === current),
        "aria-label": `show rank ${r.rank}${stragglers.has(r.rank) ? " (straggler)" : ""}`,
        onclick: () => pickTrace(r.index),
      },
      stragglers.has(r.rank) ? `⚠ ${r.rank}` : String(r.rank),
    );
  const columns = [
    { label: "rank", num: true, get: pick },
    { label: "file", get: (r) => r.file },
    { label: "step time", num: true, get: (r) => us(r.step_time_us) },
    { label: "GPU util.", num: true, get: (r) => pct(r.gpu_utilization_pct) },
    { label: "communication", num: true, get: (r) => us(r.communication_us) },
    { label: "compute", num: true, get: (r) => us(r.compute_us) },
    { label: "idle", num: true, get: (r) => us(r.idle_us) },
  ];
  // The page holding the rank shown (so its row is on screen), then Previous / Next.
  const pages = Math.max(1, Math.ceil(rows.length / RANKS_PER_PAGE));
  let page = Math.max(0, Math.floor(rows.findIndex((r) => r.index === current) / RANKS_PER_PAGE));
  const drawPage = (node) => {
    const shown = rows.slice(page * RANKS_PER_PAGE, (page + 1) * RANKS_PER_PAGE);
    const go = (to) => {
      page = to;
      drawPage(node);
    };
    const pager =
      pages > 1
        ? el(
            "div",
            { class: "pager", role: "navigation", "aria-label": "pages of ranks" },
            el("button", { type: "button", class: "ghost", id: "ranks-prev", disabled: page === 0, onclick: () => go(page - 1) }, "← Previous"),
            el("span", { class: "muted", id: "ranks-page" }, ` ranks ${page * RANKS_PER_PAGE + 1}–${page * RANKS_PER_PAGE + shown.length} of ${rows.length} `),
            el("button", { type: "button", class: "ghost", id: "ranks-next", disabled: page >= pages - 1, onclick: () => go(page + 1) }, "Next →"),
          )
        : null;
    fill(node, dataTable(columns, shown, { rowClass: (r) => (stragglers.has(r.rank) ? "straggler" : "") }), pager);
  };
  return panel({
    id: "ranks",
    title: "Ranks side by side",
    wide: true,
    tools: compareLink ? [compareLink] : [],
    note: list.length
      ? `Stragglers (⚠, highlighted): ${list.map((s) => `rank ${s.rank} (${METRIC_WORDS[s.metric] || s.metric} ${Number(s.ratio).toFixed(2)}× the median)`).join(", ")}. Click a rank to show its panels.`
      : "No straggler: every rank is within the threshold of the median. Click a rank to show its panels.",
    draw: drawPage,
  });
}
