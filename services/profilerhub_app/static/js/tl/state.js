// The timeline page's one view-state object: everything the page's modules change lives here,
// so no module keeps mutable state of its own (they import `tv` and read or write its members).
import { jobId, query } from "../common.js";

const url = query();

export const tv = {
  url, // the page's query when it opened (tl/urlstate.js reads the view back from it)
  trace: Number(url.trace) || 0,
  jobPath: `jobs/${encodeURIComponent(jobId)}`,
  dom: {}, // the page's elements (timeline.js finds them once)
  scale: null, // the TimeScale (tl/scale.js)
  cache: null, // the WindowCache (tl/window.js)
  cssW: 0,
  cssH: 0,
  frameRequested: false,
  frames: [], // draw times (ms) of the last frames, for the benchmark
  frameWaiters: [],
  lanesInfo: null,
  layout: { rows: [], height: 0 },
  scrollY: 0,
  groups: [],
  collapsed: new Set((url.collapsed || "").split(",").filter(Boolean)),
  hidden: new Set((url.hidden || "").split(",").filter(Boolean).map(Number)),
  dragged: null, // what the lane tree's drag carries: {group} or {lane}
  selection: null, // event details from timeline/event
  selecting: 0, // the latest select() wins: an older answer arriving late is dropped
  arrows: [], // [from, to] pairs of {lane_id, depth, start, dur}
  box: null, // {a, b} ns
  query: "",
  matches: [],
  matchIndex: -1,
  total: 0,
  more: false,
  names: new Map(),
  theme: {},
  urlTimer: null,
  drag: null, // a pointer drag on the canvas: {x0, y0, x, y, box, moved, scroll0}
  mouseX: null,
};
