// URL state: the page's query keeps trace, range, the groups' and lanes' order, collapsed and
// hidden lanes, the selection and the search, written back (replaceState) a moment after a change.
import { groupKey } from "./lanes.js";
import { fitTo } from "./selection.js";
import { tv } from "./state.js";

export function saveUrlSoon() {
  clearTimeout(tv.urlTimer);
  tv.urlTimer = setTimeout(saveUrl, 250);
}

function saveUrl() {
  const { scale, lanesInfo, groups } = tv;
  if (!scale) return;
  const params = new URLSearchParams();
  if (tv.trace) params.set("trace", String(tv.trace));
  params.set("start", String(Math.round(scale.start)));
  params.set("end", String(Math.round(scale.end)));
  const defaultOrder = lanesInfo.groups.map((g, i) => groupKey(g, i)).join(",");
  const order = groups.map((g) => g.key).join(",");
  if (order !== defaultOrder) params.set("order", order);
  const laneOrder = groups.flatMap((g) => g.lanes.map((lane) => lane.lane_id)).join(",");
  const defaultLanes = lanesInfo.groups.flatMap((g) => g.lanes.map((lane) => lane.lane_id)).join(",");
  if (laneOrder !== defaultLanes) params.set("lane_order", laneOrder);
  if (tv.collapsed.size) params.set("collapsed", [...tv.collapsed].join(","));
  if (tv.hidden.size) params.set("hidden", [...tv.hidden].join(","));
  if (tv.selection) params.set("sel", String(tv.selection.id));
  if (tv.query) params.set("q", tv.query);
  history.replaceState(null, "", `${location.pathname}?${params}`);
}

function usToRel(value, originNs) {
  // A trace-time µs (a double near 1.7e15) to ns relative to the origin, exactly enough.
  const whole = Math.floor(value);
  return Number(BigInt(whole) * 1000n + BigInt(Math.round((value - whole) * 1000)) - BigInt(originNs));
}

/** The lanes' groups in the URL's order (groups and lanes it does not name keep theirs, after). */
export function groupsInUrlOrder(info) {
  const url = tv.url;
  const laneRank = new Map((url.lane_order || "").split(",").filter(Boolean).map((id, i) => [Number(id), i]));
  const byRank = (a, b) => (laneRank.get(a.lane_id) ?? 1e9) - (laneRank.get(b.lane_id) ?? 1e9);
  const groups = info.groups.map((g, i) => ({ ...g, lanes: [...g.lanes].sort(byRank), key: groupKey(g, i), name: g.name || `${g.kind} ${i}` }));
  const order = (url.order || "").split(",").filter(Boolean);
  return order.length ? [...order.map((k) => groups.find((g) => g.key === k)).filter(Boolean), ...groups.filter((g) => !order.includes(g.key))] : groups;
}

/** The URL's range: `start`/`end` (ns from the origin), `t0us`/`t1us` (trace time) or `step` (the n-th). */
export function restoreRange(info) {
  const { url, scale } = tv;
  if (url.start !== undefined && url.end !== undefined) scale.set(Number(url.start), Number(url.end));
  else if (url.t0us !== undefined && url.t1us !== undefined) scale.set(usToRel(Number(url.t0us), info.origin_ns), usToRel(Number(url.t1us), info.origin_ns));
  else if (url.step !== undefined && (info.steps || [])[Number(url.step)]) {
    const step = info.steps[Number(url.step)]; // the n-th step (compare aligns two timelines at it)
    fitTo(step.start, step.end);
  }
}
