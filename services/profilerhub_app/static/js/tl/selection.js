// Selection: an event (its details, the call that launched it or the GPU ops it launched, with
// arrows between them) or a time range (shift-drag: the events summed inside it), and fitting
// the view to either.
import { api, base, count, el, errorBox, fill, ns } from "../common.js";
import { formatNs, ROW, RULER } from "./draw.js";
import { redraw } from "./frame.js";
import { clampScroll } from "./lanes.js";
import { tv } from "./state.js";
import { saveUrlSoon } from "./urlstate.js";

export const HINT = "Click an event for its details; shift-drag to select a range.";

export function rowOfLane(laneId) {
  return tv.layout.rows.find((r) => r.type === "lane" && r.lane.lane_id === laneId);
}

export function eventRect(ev) {
  const row = rowOfLane(ev.lane_id);
  if (!row || !tv.scale) return null;
  const x = tv.scale.x(ev.start);
  return { x, y: row.y - tv.scrollY + 2 + (ev.depth || 0) * ROW, w: Math.max(tv.scale.x(ev.start + ev.dur) - x, 1), h: ROW - 2 };
}

const eventPath = (id) => `${tv.jobPath}/timeline/event/${id}?trace=${tv.trace}`;

export async function select(eventId, { reveal = false } = {}) {
  const mine = ++tv.selecting;
  let ev;
  try {
    ev = await api(eventPath(eventId));
  } catch (error) {
    if (mine === tv.selecting) fill(tv.dom.details, errorBox(error));
    return;
  }
  if (mine !== tv.selecting) return;
  const arrows = [];
  if (ev.launch) {
    let launch = ev.launch;
    try {
      launch = await api(eventPath(ev.launch.id));
    } catch (_) {
      /* keep the summary without depth */
    }
    if (mine !== tv.selecting) return;
    ev.launchFull = launch;
    arrows.push([launch, ev]);
  }
  for (const op of ev.launched || []) arrows.push([ev, { depth: 0, dur: 0, ...op }]);
  tv.selection = ev;
  tv.arrows = arrows;
  if (reveal) revealEvent(ev);
  showDetails(ev);
  saveUrlSoon();
  redraw();
}

function revealEvent(ev) {
  // Show the event and the call that launched it (or the ops it launched), a dozen times wider.
  const { scale } = tv;
  const linked = [ev, ...(ev.launchFull ? [ev.launchFull] : []), ...(ev.launched || []).slice(0, 5)];
  const a = Math.min(...linked.map((e) => e.start));
  const b = Math.max(...linked.map((e) => e.start + e.dur));
  const inView = a >= scale.start && b <= scale.end && ev.dur > scale.nsPerPx * 3;
  if (!inView) {
    const span = Math.max((b - a) * 1.6, ev.dur * 12, 2000);
    scale.set((a + b) / 2 - span / 2, (a + b) / 2 + span / 2);
  }
  const row = rowOfLane(ev.lane_id);
  if (row) {
    const y = row.y - tv.scrollY;
    if (y < RULER || y > tv.cssH - 40) tv.scrollY = row.y - tv.cssH / 3;
    clampScroll();
  }
}

function laneName(laneId) {
  const row = rowOfLane(laneId);
  return row ? `${row.group.name} · ${row.lane.name}` : `lane ${laneId}`;
}

function dl(pairs) {
  return el("dl", {}, pairs.filter(([, v]) => v !== undefined && v !== null && v !== "").map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}

function showDetails(ev) {
  const args = Object.entries(ev.args || {}).filter(([, v]) => v !== null && v !== undefined);
  fill(
    tv.dom.details,
    el("h2", { id: "sel-name" }, ev.name),
    dl([
      ["kind", ev.kind],
      ["lane", laneName(ev.lane_id)],
      ["start", `${(ev.start / 1e6).toFixed(3)} ms`],
      ["duration", ns(ev.dur)],
      ["trace time", ev.ts_us !== undefined ? `${ev.ts_us} µs` : null],
    ]),
    ev.launch
      ? el(
          "div",
          { id: "sel-launch", class: "link-box" },
          el("b", {}, "Launched by "),
          el("button", { type: "button", onclick: () => select(ev.launch.id, { reveal: true }) }, `${ev.launch.name} ↑`),
          el("p", { class: "muted" }, `${laneName(ev.launch.lane_id)} · launch latency ${ns(ev.launch.latency_ns)}`),
        )
      : null,
    (ev.launched || []).length
      ? el(
          "div",
          { id: "sel-launched", class: "link-box" },
          el("b", {}, `Launched ${ev.launched.length} GPU op${ev.launched.length > 1 ? "s" : ""}: `),
          ev.launched.slice(0, 20).map((op) => el("button", { type: "button", onclick: () => select(op.id, { reveal: true }) }, `${op.name} ↓`)),
        )
      : null,
    args.length ? [el("h3", { class: "note" }, "Args"), dl(args.map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : String(v)]))] : null,
    el("button", { type: "button", onclick: () => fitTo(ev.start, ev.start + ev.dur) }, "Zoom to event (f)"),
  );
}

export function clearSelection() {
  tv.selecting += 1; // a select() still waiting for its answer is dropped
  tv.selection = null;
  tv.arrows = [];
  tv.box = null;
  fill(tv.dom.details, el("p", { class: "muted" }, HINT));
  saveUrlSoon();
  redraw();
}

export function showBox() {
  const a = Math.min(tv.box.a, tv.box.b);
  const b = Math.max(tv.box.a, tv.box.b);
  tv.selection = null;
  tv.arrows = [];
  fill(
    tv.dom.details,
    el("h2", {}, "Selected range"),
    dl([
      ["from", formatNs(a, (b - a) / 10)],
      ["to", formatNs(b, (b - a) / 10)],
      ["duration", el("span", { id: "box-duration" }, ns(b - a))],
    ]),
    el("div", { id: "box-ops" }, el("p", { class: "muted" }, "Summing the events inside…")),
    el("div", { class: "box-actions" },
      el("button", { type: "button", onclick: () => fitTo(a, b) }, "Zoom to range (f)"),
      el("a", { class: "button", id: "box-operators", href: operatorsHref(a, b) }, "Operators in this range")),
  );
  aggregate(a, b);
}

/** The Profile page's Operators tab over the calls starting in [a, b) (ns from the origin; the
 * views count trace time in µs, as the trace's `ts`). */
function operatorsHref(a, b) {
  const origin = Number(tv.lanesInfo.trace_origin_ns);
  const us = (rel) => ((origin + rel) / 1000).toFixed(3);
  const q = new URLSearchParams({ tab: "operators", trace: String(tv.trace), t0us: us(Math.floor(a)), t1us: us(Math.ceil(b)) });
  return `${base}${tv.jobPath}/views?${q}`;
}

async function aggregate(a, b) {
  const box = document.getElementById("box-ops");
  try {
    const answer = await api(`${tv.jobPath}/timeline/aggregate?trace=${tv.trace}&start=${Math.floor(a)}&end=${Math.ceil(b)}&limit=15`);
    if (!document.body.contains(box)) return;
    fill(
      box,
      el("p", { class: "muted" }, `${count(answer.events)} events in the range`),
      el(
        "table",
        {},
        el("thead", {}, el("tr", {}, el("th", {}, "name"), el("th", { class: "num" }, "count"), el("th", { class: "num" }, "time in range"))),
        el("tbody", {}, answer.ops.map((op) => el("tr", {}, el("td", { class: "name mono" }, op.name), el("td", { class: "num" }, count(op.count)), el("td", { class: "num" }, ns(op.total_ns))))),
      ),
    );
  } catch (error) {
    fill(box, el("p", { class: "muted" }, `No aggregate: ${error.message}`));
  }
}

export function fitTo(a, b) {
  const pad = (b - a) * 0.05 || 1000;
  tv.scale.set(a - pad, b + pad);
  redraw();
}

export function fit() {
  if (tv.box) fitTo(Math.min(tv.box.a, tv.box.b), Math.max(tv.box.a, tv.box.b));
  else if (tv.selection) fitTo(tv.selection.start, tv.selection.start + tv.selection.dur);
  else {
    tv.scale.fit();
    redraw();
  }
}
