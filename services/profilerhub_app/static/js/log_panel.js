// The dashboard's log panel: the lines the job's script printed, one stream per rank
// (`GET api/jobs/{id}/logs`, the hub's log of the job; docs/pages.md). While the run goes on it
// asks every few seconds for the lines after the last it has (`offset` = the last answer's
// `next_offset`), so it reads only what is new, and scrolls to them while "Follow" is ticked
// (scrolling up unticks it). The page keeps the newest KEEP lines of the stream: a long log opens
// at its tail, and older lines leave the page as new ones arrive (the count says how many are not
// shown). The filter box hides the kept lines that do not contain its words (any case).
// dashboard.js tells it the job's state (`jobstate` events): it stops asking once the run is over.
import { api, count, el, errorBox, fill, jobId, poll } from "./common.js";

const FOLLOW_MS = 2000;
const PAGE = 1000; // lines per request
export const KEEP = 5000; // lines kept in the page

const node = document.getElementById("log-panel");
const lines = document.getElementById("log-lines");
const rankSelect = document.getElementById("log-rank");
const filterBox = document.getElementById("log-filter");
const follow = document.getElementById("log-follow");
const status = document.getElementById("log-status");
const logPath = `jobs/${encodeURIComponent(jobId)}/logs`;

const state = { rank: null, ranks: [], stream: null, next: 0, total: 0, left: 0, running: true, words: [] };
let busy = null; // the read in flight (one at a time)

const clock = (ns) => new Date(ns / 1e6).toISOString().slice(11, 23);

function matches(line) {
  const text = line.dataset.text;
  return state.words.every((w) => text.includes(w));
}

function lineNode(record) {
  const node = el(
    "div",
    { class: "log-line", dataset: { source: record.source, text: record.message.toLowerCase() } },
    el("time", { title: new Date(record.ts_ns / 1e6).toLocaleString() }, clock(record.ts_ns)),
    el("span", {}, record.message),
  );
  node.hidden = !matches(node);
  return node;
}

function showStatus() {
  const kept = lines.querySelectorAll(".log-line").length;
  const shown = state.words.length ? lines.querySelectorAll(".log-line:not([hidden])").length : kept;
  const parts = [`${count(state.total)} lines`];
  if (state.left) parts.push(`the first ${count(state.left)} not kept in this page`);
  if (state.words.length) parts.push(`${count(shown)} of the ${count(kept)} kept match`);
  parts.push(state.running ? `following every ${FOLLOW_MS / 1000} s` : "the run is over");
  status.textContent = parts.join(" · ");
  Object.assign(node.dataset, { lines: String(kept), shown: String(shown), total: String(state.total), rank: String(state.rank ?? "") });
}

function showRanks() {
  const wanted = JSON.stringify([state.ranks, state.rank]);
  if (rankSelect.dataset.shown === wanted) return;
  rankSelect.dataset.shown = wanted;
  fill(rankSelect, state.ranks.map((r) => el("option", { value: r, selected: r === state.rank }, `rank ${r} · algo-${r + 1}`)));
  rankSelect.disabled = state.ranks.length < 2;
  rankSelect.title = state.stream || "";
}

function append(records) {
  if (!records.length) return;
  lines.querySelector(".empty")?.remove();
  const atEnd = follow.checked;
  lines.append(...records.map(lineNode));
  const extra = lines.childElementCount - KEEP;
  for (let i = 0; i < extra; i += 1) lines.firstElementChild.remove();
  if (extra > 0) state.left += extra;
  if (atEnd) lines.scrollTop = lines.scrollHeight;
}

async function read() {
  // From the last line this page has, until the rank has nothing newer.
  for (;;) {
    const rank = state.rank === null ? "" : `&rank=${state.rank}`;
    const page = await api(`${logPath}?offset=${state.next}&limit=${PAGE}${rank}`);
    if (state.rank === null && page.rank !== null && page.total > KEEP) {
      // first lines of a long log: open at its tail instead
      Object.assign(state, { rank: page.rank, next: page.total - KEEP, left: page.total - KEEP });
      continue;
    }
    Object.assign(state, { rank: page.rank, ranks: page.ranks, stream: page.stream, total: page.total, next: page.next_offset });
    append(page.lines);
    if (page.lines.length < PAGE) break;
  }
  if (!lines.querySelector(".log-line")) {
    fill(lines, el("p", { class: "empty" }, state.running ? "No lines yet: what the script prints appears here as it arrives." : "The run printed no lines."));
  }
  showRanks();
  showStatus();
  node.removeAttribute("aria-busy");
  node.dataset.ready = "true";
}

async function tick() {
  if (!busy) {
    busy = read().catch((error) => {
      status.replaceChildren(errorBox(error));
    });
    await busy;
    busy = null;
  }
}

function restart(rank) {
  Object.assign(state, { rank, next: 0, total: 0, left: 0 });
  lines.replaceChildren();
  tick();
}

rankSelect.addEventListener("change", () => restart(Number(rankSelect.value)));
filterBox.addEventListener("input", () => {
  state.words = filterBox.value.toLowerCase().split(/\s+/).filter(Boolean);
  for (const line of lines.querySelectorAll(".log-line")) line.hidden = !matches(line);
  showStatus();
});
lines.addEventListener("scroll", () => {
  follow.checked = lines.scrollTop + lines.clientHeight >= lines.scrollHeight - 4;
});
follow.addEventListener("change", () => {
  if (follow.checked) lines.scrollTop = lines.scrollHeight;
});
function jobState(job) {
  const running = job.status === "InProgress" && !job.completed_at;
  if (state.running && !running) {
    state.running = false;
    tick(); // the last lines the run sent
  }
  state.running = running;
}
document.addEventListener("jobstate", (event) => jobState(event.detail));
if (window.__jobState) jobState(window.__jobState); // dashboard.js read the job first

if (node) poll(tick, FOLLOW_MS, () => state.running);
