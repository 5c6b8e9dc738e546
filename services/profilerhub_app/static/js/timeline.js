// The timeline page: a canvas over window queries (tl/window.js), one TimeScale (tl/scale.js),
// one requestAnimationFrame scheduler, the renderer in tl/draw.js. Inputs: wheel (zoom at the
// cursor; shift = pan; over the lane names = scroll), drag (pan), shift-drag (select a range),
// click (select an event), keys w/s (zoom) a/d and ←/→ (pan) ↑/↓ (scroll) f (fit) Esc (clear).
// The URL keeps trace, range, lane order/collapsed/hidden, selection and search.
import { api, apiBinary, base, count, el, errorBox, fill, jobId, ns, query } from "./common.js";
import { drawFrame, formatNs, GUTTER, hitTest, layout, ROW, RULER } from "./tl/draw.js";
import { TimeScale } from "./tl/scale.js";
import { decodeWindow } from "./tl/phw1.js";
import { WindowCache } from "./tl/window.js";

const jobPath = `jobs/${encodeURIComponent(jobId)}`;
const view = document.getElementById("tl-view");
const canvas = document.getElementById("tl-canvas");
const side = document.getElementById("tl-side");
const rangeText = document.getElementById("tl-range");
const matchesText = document.getElementById("tl-matches");
const queryInput = document.getElementById("tl-query");
const ctx = canvas.getContext("2d", { alpha: false });

const url = query();
const trace = Number(url.trace) || 0;
const st = {
  lanesInfo: null,
  layout: { rows: [], height: 0 },
  scrollY: 0,
  selection: null, // event details from timeline/event
  arrows: [], // [from, to] pairs of {lane_id, depth, start, dur}
  box: null, // {a, b} ns
  collapsed: new Set((url.collapsed || "").split(",").filter(Boolean)),
  hidden: new Set((url.hidden || "").split(",").filter(Boolean).map(Number)),
  groups: [],
  names: new Map(),
  matches: [],
  matchIndex: -1,
  total: 0,
  theme: {},
};
let scale = null;
let cache = null;
let cssW = 0;
let cssH = 0;
const frames = []; // draw times (ms) of the last frames, for the benchmark
const frameWaiters = [];
// For benchmarks/bench_pages.py: frame costs, the first frame with events, a promise of the next frame.
window.__timeline = {
  frames,
  state: st,
  firstDraw: null,
  nextFrame: () => new Promise((resolve) => frameWaiters.push(resolve)),
};

function readTheme() {
  const css = getComputedStyle(document.documentElement);
  const v = (name) => css.getPropertyValue(name).trim();
  st.theme = {
    bg: v("--bg"),
    panel: v("--panel"),
    panel2: v("--panel-2"),
    text: v("--text"),
    muted: v("--muted"),
    line: v("--line"),
    accent: v("--accent"),
    focus: v("--focus"),
    util: v("--c2"),
    counter: v("--c4"),
    selectFill: document.documentElement.dataset.theme === "dark" ? "rgba(78,163,242,0.16)" : "rgba(10,95,180,0.12)",
  };
}

// One scheduler: any change marks the frame dirty; one rAF draws it.
let frameRequested = false;
function redraw() {
  if (frameRequested) return;
  frameRequested = true;
  requestAnimationFrame(frame);
}

function frame() {
  frameRequested = false;
  if (!scale) return;
  const t = performance.now();
  const px = Math.max(1, Math.round(cssW - GUTTER));
  const plan = cache.plan(scale.start, scale.end, scale.nsPerPx);
  cache.want(scale.start, scale.end, px);
  const drawn = drawFrame(ctx, cssW, cssH, scale, plan.pieces, { ...st, layout: st.layout, collapsed: st.collapsed, eventRect });
  const done = performance.now();
  frames.push(done - t);
  if (frames.length > 500) frames.shift();
  if (drawn > 0 && window.__timeline.firstDraw === null) window.__timeline.firstDraw = done;
  for (const resolve of frameWaiters.splice(0)) resolve(done);
  canvas.dataset.drawn = String(drawn);
  // ns per column of the finest window drawn, and whether the view is all at its resolution (tests).
  canvas.dataset.res = plan.pieces.length ? String(Math.min(...plan.pieces.map((p) => p.w.nsPerPx))) : "";
  canvas.dataset.complete = String(plan.complete);
  canvas.dataset.start = String(Math.round(scale.start));
  canvas.dataset.end = String(Math.round(scale.end));
  const sel = st.selection && eventRect(st.selection);
  canvas.dataset.selRect = sel ? [sel.x, sel.y, sel.w, sel.h].map(Math.round).join(",") : "";
  rangeText.textContent = `${formatNs(scale.start, scale.span / 10)} – ${formatNs(scale.end, scale.span / 10)} (${ns(scale.span)})`;
  saveUrlSoon();
}

function resize() {
  const rect = view.getBoundingClientRect();
  const dpr = window.devicePixelRatio || 1;
  cssW = Math.max(300, rect.width);
  cssH = Math.max(200, rect.height);
  canvas.width = Math.round(cssW * dpr);
  canvas.height = Math.round(cssH * dpr);
  canvas.style.width = `${cssW}px`;
  canvas.style.height = `${cssH}px`;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  if (scale) {
    scale.left = GUTTER;
    scale.width = cssW - GUTTER;
  }
  redraw();
}

// ---- lanes ------------------------------------------------------------------------------

function groupKey(group, i) {
  if (group.kind === "host") return `host-${group.pid}`;
  if (group.kind === "gpu") return `gpu-${group.device}`;
  return `${group.kind || "group"}-${i}`;
}

function relayout() {
  st.layout = layout(st.lanesInfo, { groups: st.groups, collapsed: st.collapsed, hidden: st.hidden });
  const lanes = [];
  const counters = [];
  for (const row of st.layout.rows) {
    if (row.type === "lane") lanes.push(row.lane.lane_id);
    if (row.type === "counter") counters.push(row.counter.counter_id);
  }
  cache.select(lanes, counters);
  clampScroll();
  renderLaneTree();
  redraw();
}

function clampScroll() {
  st.scrollY = Math.max(0, Math.min(st.scrollY, st.layout.height - cssH + 40));
}

// Reordering: groups among groups, lanes inside their group; by drag in the Lanes tree, by the
// ↑/↓ buttons of a group, or Alt+↑/↓ on a focused group or lane. The URL keeps both orders.
function moveItem(list, from, to) {
  if (from < 0 || to < 0 || from >= list.length || to >= list.length || from === to) return false;
  const [item] = list.splice(from, 1);
  list.splice(to, 0, item);
  return true;
}

function moveGroup(key, delta, focus = `[data-move="${key}:${delta}"]`) {
  const i = st.groups.findIndex((g) => g.key === key);
  if (!moveItem(st.groups, i, i + delta)) return;
  relayout();
  document.querySelector(focus)?.focus();
}

function moveLane(laneId, delta) {
  const group = st.groups.find((g) => g.lanes.some((lane) => lane.lane_id === laneId));
  if (!group) return;
  const i = group.lanes.findIndex((lane) => lane.lane_id === laneId);
  if (!moveItem(group.lanes, i, i + delta)) return;
  relayout();
  document.querySelector(`[data-lane="${laneId}"] input`)?.focus();
}

function toggleGroup(key) {
  if (st.collapsed.has(key)) st.collapsed.delete(key);
  else st.collapsed.add(key);
  relayout();
}

// Drag and drop: what is dragged ({group} or {lane}); a drop lands before the item under the
// pointer (after it in its lower half).
let dragged = null;
function dropTarget(e, item) {
  e.preventDefault();
  const rect = e.currentTarget.getBoundingClientRect();
  const after = e.clientY > rect.top + rect.height / 2;
  e.currentTarget.classList.toggle("drop-before", !after);
  e.currentTarget.classList.toggle("drop-after", after);
  return { ...item, after };
}

function onDrop(e, target) {
  e.preventDefault();
  e.stopPropagation();
  const at = dropTarget(e, target);
  const from = dragged;
  dragged = null;
  if (!from) return;
  if (from.group !== undefined && at.group !== undefined) {
    const i = st.groups.findIndex((g) => g.key === from.group);
    let j = st.groups.findIndex((g) => g.key === at.group) + (at.after ? 1 : 0);
    if (j > i) j -= 1;
    moveItem(st.groups, i, j);
  } else if (from.lane !== undefined && at.lane !== undefined) {
    const group = st.groups.find((g) => g.lanes.some((lane) => lane.lane_id === from.lane));
    if (!group || !group.lanes.some((lane) => lane.lane_id === at.lane)) return renderLaneTree(); // lanes stay in their group
    const i = group.lanes.findIndex((lane) => lane.lane_id === from.lane);
    let j = group.lanes.findIndex((lane) => lane.lane_id === at.lane) + (at.after ? 1 : 0);
    if (j > i) j -= 1;
    moveItem(group.lanes, i, j);
  }
  relayout();
}

function dragHandlers(item) {
  return {
    draggable: "true",
    ondragstart: (e) => {
      e.stopPropagation();
      dragged = item;
      e.dataTransfer.effectAllowed = "move";
      e.dataTransfer.setData("text/plain", JSON.stringify(item));
    },
    ondragover: (e) => {
      if (dragged && (dragged.group !== undefined) === (item.group !== undefined)) {
        e.stopPropagation();
        dropTarget(e, item);
      }
    },
    ondragleave: (e) => e.currentTarget.classList.remove("drop-before", "drop-after"),
    ondrop: (e) => {
      if (dragged && (dragged.group !== undefined) === (item.group !== undefined)) onDrop(e, item);
    },
    ondragend: () => {
      dragged = null;
      laneTree.querySelectorAll(".drop-before, .drop-after").forEach((n) => n.classList.remove("drop-before", "drop-after"));
    },
  };
}

function altArrows(move) {
  return (e) => {
    if (!e.altKey || (e.key !== "ArrowUp" && e.key !== "ArrowDown")) return;
    e.preventDefault();
    e.stopPropagation();
    move(e.key === "ArrowUp" ? -1 : 1);
  };
}

let laneTree = null;
function renderLaneTree() {
  if (!laneTree) return;
  fill(
    laneTree,
    el(
      "ul",
      { class: "lane-tree", "aria-describedby": "lane-tree-help" },
      st.groups.map((g, i) =>
        el(
          "li",
          { "data-group": g.key, ...dragHandlers({ group: g.key }) },
          el(
            "div",
            { class: "lane-group" },
            el("button", { type: "button", class: "ghost", "aria-expanded": String(!st.collapsed.has(g.key)), "aria-keyshortcuts": "Alt+ArrowUp Alt+ArrowDown", "data-toggle": g.key, onclick: () => toggleGroup(g.key), onkeydown: altArrows((d) => moveGroup(g.key, d, `[data-toggle="${g.key}"]`)) }, `${st.collapsed.has(g.key) ? "▸" : "▾"} ${g.name}`),
            el("button", { type: "button", class: "ghost", "aria-label": `move ${g.name} up`, disabled: i === 0, "data-move": `${g.key}:-1`, onclick: () => moveGroup(g.key, -1) }, "↑"),
            el("button", { type: "button", class: "ghost", "aria-label": `move ${g.name} down`, disabled: i === st.groups.length - 1, "data-move": `${g.key}:1`, onclick: () => moveGroup(g.key, 1) }, "↓"),
          ),
          st.collapsed.has(g.key)
            ? null
            : el(
                "ul",
                {},
                g.lanes.map((lane) =>
                  el(
                    "li",
                    { "data-lane": lane.lane_id, class: "lane-item", ...dragHandlers({ lane: lane.lane_id }) },
                    el(
                      "label",
                      {},
                      el("span", { class: "grip", "aria-hidden": "true" }, "⠿"),
                      el("input", {
                        type: "checkbox",
                        checked: !st.hidden.has(lane.lane_id),
                        "aria-keyshortcuts": "Alt+ArrowUp Alt+ArrowDown",
                        onkeydown: altArrows((d) => moveLane(lane.lane_id, d)),
                        onchange: (e) => {
                          if (e.target.checked) st.hidden.delete(lane.lane_id);
                          else st.hidden.add(lane.lane_id);
                          relayout();
                        },
                      }),
                      ` ${lane.name} `,
                      el("span", { class: "muted" }, count(lane.events)),
                    ),
                  ),
                ),
              ),
        ),
      ),
    ),
    el("p", { class: "muted keys", id: "lane-tree-help" }, "Drag a group or a lane to reorder it, or Alt+↑/↓ on it."),
  );
}

// ---- selection --------------------------------------------------------------------------

function rowOfLane(laneId) {
  return st.layout.rows.find((r) => r.type === "lane" && r.lane.lane_id === laneId);
}

function eventRect(ev) {
  const row = rowOfLane(ev.lane_id);
  if (!row || !scale) return null;
  const x = scale.x(ev.start);
  return { x, y: row.y - st.scrollY + 2 + (ev.depth || 0) * ROW, w: Math.max(scale.x(ev.start + ev.dur) - x, 1), h: ROW - 2 };
}

let selecting = 0; // the latest select() wins: an older answer arriving late is dropped

async function select(eventId, { reveal = false } = {}) {
  const mine = ++selecting;
  let ev;
  try {
    ev = await api(`${jobPath}/timeline/event/${eventId}?trace=${trace}`);
  } catch (error) {
    if (mine === selecting) fill(details, errorBox(error));
    return;
  }
  if (mine !== selecting) return;
  const arrows = [];
  if (ev.launch) {
    let launch = ev.launch;
    try {
      launch = await api(`${jobPath}/timeline/event/${ev.launch.id}?trace=${trace}`);
    } catch (_) {
      /* keep the summary without depth */
    }
    if (mine !== selecting) return;
    ev.launchFull = launch;
    arrows.push([launch, ev]);
  }
  for (const op of ev.launched || []) arrows.push([ev, { depth: 0, dur: 0, ...op }]);
  st.selection = ev;
  st.arrows = arrows;
  if (reveal) revealEvent(ev);
  showDetails(ev);
  saveUrlSoon();
  redraw();
}

function revealEvent(ev) {
  // Show the event and the call that launched it (or the ops it launched), a dozen times wider.
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
    const y = row.y - st.scrollY;
    if (y < RULER || y > cssH - 40) st.scrollY = row.y - cssH / 3;
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
    details,
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

function clearSelection() {
  selecting += 1; // a select() still waiting for its answer is dropped
  st.selection = null;
  st.arrows = [];
  st.box = null;
  fill(details, el("p", { class: "muted" }, "Click an event for its details; shift-drag to select a range."));
  saveUrlSoon();
  redraw();
}

function showBox() {
  const a = Math.min(st.box.a, st.box.b);
  const b = Math.max(st.box.a, st.box.b);
  st.selection = null;
  st.arrows = [];
  fill(
    details,
    el("h2", {}, "Selected range"),
    dl([
      ["from", formatNs(a, (b - a) / 10)],
      ["to", formatNs(b, (b - a) / 10)],
      ["duration", el("span", { id: "box-duration" }, ns(b - a))],
    ]),
    el("div", { id: "box-ops" }, el("p", { class: "muted" }, "Summing the events inside…")),
    el("button", { type: "button", onclick: () => fitTo(a, b) }, "Zoom to range (f)"),
  );
  aggregate(a, b);
}

async function aggregate(a, b) {
  const box = document.getElementById("box-ops");
  try {
    const answer = await api(`${jobPath}/timeline/aggregate?trace=${trace}&start=${Math.floor(a)}&end=${Math.ceil(b)}&limit=15`);
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

function fitTo(a, b) {
  const pad = (b - a) * 0.05 || 1000;
  scale.set(a - pad, b + pad);
  redraw();
}

function fit() {
  if (st.box) fitTo(Math.min(st.box.a, st.box.b), Math.max(st.box.a, st.box.b));
  else if (st.selection) fitTo(st.selection.start, st.selection.start + st.selection.dur);
  else {
    scale.fit();
    redraw();
  }
}

// ---- search -----------------------------------------------------------------------------

async function search(q) {
  st.matches = [];
  st.matchIndex = -1;
  st.query = q;
  if (!q) {
    matchesText.textContent = "";
    saveUrlSoon();
    return;
  }
  const answer = await api(`${jobPath}/timeline/search?trace=${trace}&q=${encodeURIComponent(q)}&limit=500`);
  st.matches = answer.matches;
  st.total = answer.total;
  st.more = answer.more;
  if (!st.matches.length) {
    matchesText.textContent = "no match";
    return;
  }
  await step(1);
}

async function step(delta) {
  if (!st.matches.length) return;
  let i = st.matchIndex + delta;
  if (i >= st.matches.length && st.more) {
    const last = st.matches[st.matches.length - 1];
    const answer = await api(`${jobPath}/timeline/search?trace=${trace}&q=${encodeURIComponent(st.query)}&limit=500&after=${last.start + 1}`);
    st.matches.push(...answer.matches);
    st.more = answer.more;
  }
  i = (i + st.matches.length) % st.matches.length;
  st.matchIndex = i;
  await select(st.matches[i].id, { reveal: true });
  matchesText.textContent = `${count(i + 1)} of ${count(st.total)}`; // once the match is shown
}

// ---- URL --------------------------------------------------------------------------------

let urlTimer = null;
function saveUrlSoon() {
  clearTimeout(urlTimer);
  urlTimer = setTimeout(saveUrl, 250);
}

function saveUrl() {
  if (!scale) return;
  const params = new URLSearchParams();
  if (trace) params.set("trace", String(trace));
  params.set("start", String(Math.round(scale.start)));
  params.set("end", String(Math.round(scale.end)));
  const defaultOrder = st.lanesInfo.groups.map((g, i) => groupKey(g, i)).join(",");
  const order = st.groups.map((g) => g.key).join(",");
  if (order !== defaultOrder) params.set("order", order);
  const laneOrder = st.groups.flatMap((g) => g.lanes.map((lane) => lane.lane_id)).join(",");
  const defaultLanes = st.lanesInfo.groups.flatMap((g) => g.lanes.map((lane) => lane.lane_id)).join(",");
  if (laneOrder !== defaultLanes) params.set("lane_order", laneOrder);
  if (st.collapsed.size) params.set("collapsed", [...st.collapsed].join(","));
  if (st.hidden.size) params.set("hidden", [...st.hidden].join(","));
  if (st.selection) params.set("sel", String(st.selection.id));
  if (st.query) params.set("q", st.query);
  history.replaceState(null, "", `${location.pathname}?${params}`);
}

function usToRel(value, originNs) {
  // A trace-time µs (a double near 1.7e15) to ns relative to the origin, exactly enough.
  const whole = Math.floor(value);
  return Number(BigInt(whole) * 1000n + BigInt(Math.round((value - whole) * 1000)) - BigInt(originNs));
}

// ---- input ------------------------------------------------------------------------------

function rowAt(y) {
  const yy = y + st.scrollY;
  return st.layout.rows.find((r) => yy >= r.y && yy < r.y + r.h);
}

let drag = null;
view.addEventListener("pointerdown", (e) => {
  if (e.button !== 0) return;
  view.focus({ preventScroll: true });
  const rect = view.getBoundingClientRect();
  const x = e.clientX - rect.left;
  const y = e.clientY - rect.top;
  drag = { x0: x, y0: y, x, y, box: e.shiftKey || y < RULER, moved: false, scroll0: st.scrollY };
  if (drag.box && x > GUTTER) st.box = { a: scale.t(x), b: scale.t(x) };
  view.setPointerCapture(e.pointerId);
});
view.addEventListener("pointermove", (e) => {
  if (!drag) return;
  const rect = view.getBoundingClientRect();
  const x = e.clientX - rect.left;
  const y = e.clientY - rect.top;
  if (Math.abs(x - drag.x0) + Math.abs(y - drag.y0) > 3) drag.moved = true;
  if (drag.box && st.box) st.box.b = scale.t(Math.max(GUTTER, x));
  else if (drag.moved) {
    scale.pan(drag.x - x);
    st.scrollY = drag.scroll0 - (y - drag.y0);
    clampScroll();
    view.classList.add("dragging");
  }
  drag.x = x;
  drag.y = y;
  redraw();
});
view.addEventListener("pointerup", (e) => {
  if (!drag) return;
  const d = drag;
  drag = null;
  view.classList.remove("dragging");
  if (d.box && st.box) {
    if (Math.abs(scale.x(st.box.b) - scale.x(st.box.a)) < 3) st.box = null;
    else showBox();
    redraw();
    return;
  }
  if (d.moved) return;
  click(d.x, d.y);
});

function click(x, y) {
  const row = rowAt(y);
  if (!row) return;
  if (row.type === "group" && x < GUTTER) return toggleGroup(row.group.key);
  if (x < GUTTER) return;
  const t = scale.t(x);
  const piece = cache.plan(scale.start, scale.end, scale.nsPerPx).pieces.find((p) => t >= p.t0 && t < p.t1);
  const hit = hitTest(scale, piece ? piece.w : null, { ...row, y: row.y - st.scrollY }, x, y);
  if (!hit) return clearSelection();
  st.box = null;
  if (hit.block && hit.count > 1) {
    fitTo(hit.start, hit.end); // a merged block: zoom into it
    return;
  }
  select(hit.id);
}

view.addEventListener(
  "wheel",
  (e) => {
    e.preventDefault();
    const rect = view.getBoundingClientRect();
    const x = e.clientX - rect.left;
    if (x < GUTTER) {
      st.scrollY += e.deltaY;
      clampScroll();
    } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      scale.pan(e.shiftKey ? e.deltaY : e.deltaX);
    } else {
      scale.zoom(Math.exp(e.deltaY * (e.deltaMode === 1 ? 0.05 : 0.0025)), x);
    }
    redraw();
  },
  { passive: false },
);

let mouseX = null;
view.addEventListener("mousemove", (e) => {
  mouseX = e.clientX - view.getBoundingClientRect().left;
});
view.addEventListener("mouseleave", () => {
  mouseX = null;
});

function onKey(e) {
  if (!scale || e.ctrlKey || e.metaKey || e.altKey) return;
  const anchor = mouseX !== null && mouseX > GUTTER ? mouseX : undefined;
  const keys = {
    w: () => scale.zoom(0.7, anchor),
    s: () => scale.zoom(1 / 0.7, anchor),
    a: () => scale.pan(-(cssW - GUTTER) * 0.2),
    d: () => scale.pan((cssW - GUTTER) * 0.2),
    ArrowLeft: () => scale.pan(-(cssW - GUTTER) * 0.1),
    ArrowRight: () => scale.pan((cssW - GUTTER) * 0.1),
    ArrowUp: () => {
      st.scrollY -= 60;
      clampScroll();
    },
    ArrowDown: () => {
      st.scrollY += 60;
      clampScroll();
    },
    f: fit,
    Escape: clearSelection,
  };
  const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
  if (!keys[key]) return;
  e.preventDefault();
  keys[key]();
  redraw();
}
view.addEventListener("keydown", onKey);
document.addEventListener("keydown", (e) => {
  if (e.target === view || ["INPUT", "SELECT", "TEXTAREA", "BUTTON"].includes(e.target.tagName)) return;
  onKey(e);
});

document.getElementById("tl-search").addEventListener("submit", (e) => {
  e.preventDefault();
  search(queryInput.value.trim()).catch((error) => (matchesText.textContent = error.message));
});
document.getElementById("tl-next").addEventListener("click", () => step(1));
document.getElementById("tl-prev").addEventListener("click", () => step(-1));
document.getElementById("tl-fit").addEventListener("click", fit);
window.addEventListener("resize", resize);
window.addEventListener("themechange", () => {
  readTheme();
  redraw();
});

// ---- start ------------------------------------------------------------------------------

const details = el("div", { id: "tl-details" }, el("p", { class: "muted" }, "Click an event for its details; shift-drag to select a range."));

async function start() {
  readTheme();
  let info;
  let overview;
  // Both at once (the page preloads them for trace 0): the overview draws the first view.
  const first = apiBinary(`${jobPath}/timeline/window?trace=${trace}&overview=1`).then(decodeWindow, () => null);
  try {
    [info, overview] = await Promise.all([api(`${jobPath}/timeline/lanes?trace=${trace}`), first]);
  } catch (error) {
    fill(side, errorBox(error));
    return;
  }
  st.lanesInfo = info;
  const crumb = document.getElementById("tl-job");
  crumb.textContent = (info.trace && info.trace.file) || "job";
  api(jobPath).then((job) => {
    crumb.textContent = job.name || jobId;
    document.title = `${job.name || jobId} · timeline`;
  }, () => {});
  // Lanes in the URL's order (those it does not name keep theirs, after the named ones).
  const laneRank = new Map((url.lane_order || "").split(",").filter(Boolean).map((id, i) => [Number(id), i]));
  const byRank = (a, b) => (laneRank.get(a.lane_id) ?? 1e9) - (laneRank.get(b.lane_id) ?? 1e9);
  const groups = info.groups.map((g, i) => ({ ...g, lanes: [...g.lanes].sort(byRank), key: groupKey(g, i), name: g.name || `${g.kind} ${i}` }));
  const order = (url.order || "").split(",").filter(Boolean);
  st.groups = order.length ? [...order.map((k) => groups.find((g) => g.key === k)).filter(Boolean), ...groups.filter((g) => !order.includes(g.key))] : groups;
  scale = new TimeScale(info.t_min, info.t_end);
  cache = new WindowCache(jobPath, trace, info.t_min, info.t_end, () => redraw(), (error) => {
    console.warn("timeline window:", error.message);
    fill(details, errorBox(error));
  });
  if (overview) cache.seed(overview);
  window.__timeline.cache = cache;
  window.__timeline.scale = scale;
  laneTree = el("div", { id: "lane-tree" });
  fill(side, details, el("details", { class: "lanes-box", open: true }, el("summary", {}, "Lanes"), laneTree), el("p", { class: "muted keys" }, "wheel / w s: zoom · drag / a d ← →: pan · ↑ ↓: scroll · shift-drag: select a range · f: fit · Esc: clear"));
  resize();
  if (url.start !== undefined && url.end !== undefined) scale.set(Number(url.start), Number(url.end));
  else if (url.t0us !== undefined && url.t1us !== undefined) scale.set(usToRel(Number(url.t0us), info.origin_ns), usToRel(Number(url.t1us), info.origin_ns));
  else if (url.step !== undefined && (info.steps || [])[Number(url.step)]) {
    const step = info.steps[Number(url.step)]; // the n-th step (compare aligns two timelines at it)
    fitTo(step.start, step.end);
  }
  relayout();
  if (url.q) {
    queryInput.value = url.q;
    st.query = url.q;
    if (url.sel === undefined) await search(url.q);
    else {
      const answer = await api(`${jobPath}/timeline/search?trace=${trace}&q=${encodeURIComponent(url.q)}&limit=500`);
      Object.assign(st, { matches: answer.matches, total: answer.total, more: answer.more });
      st.matchIndex = answer.matches.findIndex((m) => m.id === Number(url.sel));
      matchesText.textContent = st.matchIndex >= 0 ? `${count(st.matchIndex + 1)} of ${count(st.total)}` : `${count(st.total)} matches`;
    }
  }
  if (url.sel !== undefined) await select(Number(url.sel));
  view.dataset.ready = "true";
}

start();
