// The timeline page: a canvas over window queries (tl/window.js), one TimeScale (tl/scale.js),
// one requestAnimationFrame scheduler (tl/frame.js), the renderer in tl/draw.js. Its parts, by
// concern: the lanes and their tree (tl/lanes.js, drag and drop in tl/dnd.js), the selection
// (tl/selection.js), search (tl/search.js), URL state (tl/urlstate.js), input (tl/input.js); all
// their state is the one view-state object (tl/state.js). This module finds the page's elements
// and starts it.
import { api, apiBinary, el, errorBox, fill, jobId } from "./common.js";
import { readTheme, redraw, resize } from "./tl/frame.js";
import { installInput } from "./tl/input.js";
import { relayout } from "./tl/lanes.js";
import { decodeWindow } from "./tl/phw1.js";
import { TimeScale } from "./tl/scale.js";
import { installRankPicker } from "./tl/ranks.js";
import { restoreSearch, search, step } from "./tl/search.js";
import { fit, HINT, select } from "./tl/selection.js";
import { tv } from "./tl/state.js";
import { groupsInUrlOrder, restoreRange } from "./tl/urlstate.js";
import { WindowCache } from "./tl/window.js";

const byId = (id) => document.getElementById(id);
const canvas = byId("tl-canvas");
tv.dom = {
  view: byId("tl-view"),
  canvas,
  ctx: canvas.getContext("2d", { alpha: false }),
  side: byId("tl-side"),
  range: byId("tl-range"),
  matches: byId("tl-matches"),
  query: byId("tl-query"),
  details: el("div", { id: "tl-details" }, el("p", { class: "muted" }, HINT)),
  laneTree: null,
};

// For benchmarks/bench_pages.py: frame costs, the first frame with events, a promise of the next frame.
window.__timeline = {
  frames: tv.frames,
  state: tv,
  firstDraw: null,
  nextFrame: () => new Promise((resolve) => tv.frameWaiters.push(resolve)),
};

installInput();
byId("tl-search").addEventListener("submit", (e) => {
  e.preventDefault();
  search(tv.dom.query.value.trim()).catch((error) => (tv.dom.matches.textContent = error.message));
});
byId("tl-next").addEventListener("click", () => step(1));
byId("tl-prev").addEventListener("click", () => step(-1));
byId("tl-fit").addEventListener("click", fit);
window.addEventListener("resize", resize);
window.addEventListener("themechange", () => {
  readTheme();
  redraw();
});

async function start() {
  const { jobPath, trace, url, dom } = tv;
  readTheme();
  let info;
  let overview;
  // Both at once (the page preloads them for trace 0): the overview draws the first view.
  const first = apiBinary(`${jobPath}/timeline/window?trace=${trace}&overview=1`).then(decodeWindow, () => null);
  try {
    [info, overview] = await Promise.all([api(`${jobPath}/timeline/lanes?trace=${trace}`), first]);
  } catch (error) {
    fill(dom.side, errorBox(error));
    return;
  }
  tv.lanesInfo = info;
  const crumb = byId("tl-job");
  crumb.textContent = (info.trace && info.trace.file) || "job";
  api(jobPath).then((job) => {
    crumb.textContent = job.name || jobId;
    document.title = `${job.name || jobId} · timeline`;
    if (job.ranks > 1) installRankPicker(dom.range).catch((error) => console.warn("rank picker:", error.message));
  }, () => {});
  tv.groups = groupsInUrlOrder(info);
  tv.scale = new TimeScale(info.t_min, info.t_end);
  tv.cache = new WindowCache(jobPath, trace, info.t_min, info.t_end, () => redraw(), (error) => {
    console.warn("timeline window:", error.message);
    fill(dom.details, errorBox(error));
  });
  if (overview) tv.cache.seed(overview);
  window.__timeline.cache = tv.cache;
  window.__timeline.scale = tv.scale;
  dom.laneTree = el("div", { id: "lane-tree" });
  fill(dom.side, dom.details, el("details", { class: "lanes-box", open: true }, el("summary", {}, "Lanes"), dom.laneTree), el("p", { class: "muted keys" }, "wheel / w s: zoom · drag / a d ← →: pan · ↑ ↓: scroll · shift-drag: select a range · f: fit · Esc: clear"));
  resize();
  restoreRange(info);
  relayout();
  if (url.q) await restoreSearch(url.q, url.sel);
  if (url.sel !== undefined) await select(Number(url.sel));
  dom.view.dataset.ready = "true";
}

start();
