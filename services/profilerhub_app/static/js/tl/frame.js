// One scheduler: any change asks for a frame (`redraw`); one requestAnimationFrame draws it with
// tl/draw.js, from what the window cache has for the view. Also the canvas's size and the
// theme's colours the renderer uses.
import { ns } from "../common.js";
import { drawFrame, formatNs, GUTTER } from "./draw.js";
import { eventRect } from "./selection.js";
import { tv } from "./state.js";
import { saveUrlSoon } from "./urlstate.js";

export function readTheme() {
  const css = getComputedStyle(document.documentElement);
  const v = (name) => css.getPropertyValue(name).trim();
  tv.theme = {
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

export function redraw() {
  if (tv.frameRequested) return;
  tv.frameRequested = true;
  requestAnimationFrame(frame);
}

function frame() {
  tv.frameRequested = false;
  const { scale, cache, dom } = tv;
  if (!scale) return;
  const t = performance.now();
  const px = Math.max(1, Math.round(tv.cssW - GUTTER));
  const plan = cache.plan(scale.start, scale.end, scale.nsPerPx);
  cache.want(scale.start, scale.end, px);
  const drawn = drawFrame(dom.ctx, tv.cssW, tv.cssH, scale, plan.pieces, { ...tv, eventRect });
  const done = performance.now();
  tv.frames.push(done - t);
  if (tv.frames.length > 500) tv.frames.shift();
  if (drawn > 0 && window.__timeline.firstDraw === null) window.__timeline.firstDraw = done;
  for (const resolve of tv.frameWaiters.splice(0)) resolve(done);
  const data = dom.canvas.dataset;
  data.drawn = String(drawn);
  // ns per column of the finest window drawn, and whether the view is all at its resolution (tests).
  data.res = plan.pieces.length ? String(Math.min(...plan.pieces.map((p) => p.w.nsPerPx))) : "";
  data.complete = String(plan.complete);
  data.start = String(Math.round(scale.start));
  data.end = String(Math.round(scale.end));
  const sel = tv.selection && eventRect(tv.selection);
  data.selRect = sel ? [sel.x, sel.y, sel.w, sel.h].map(Math.round).join(",") : "";
  dom.range.textContent = `${formatNs(scale.start, scale.span / 10)} – ${formatNs(scale.end, scale.span / 10)} (${ns(scale.span)})`;
  saveUrlSoon();
}

export function resize() {
  const { view, canvas, ctx } = tv.dom;
  const rect = view.getBoundingClientRect();
  const dpr = window.devicePixelRatio || 1;
  tv.cssW = Math.max(300, rect.width);
  tv.cssH = Math.max(200, rect.height);
  canvas.width = Math.round(tv.cssW * dpr);
  canvas.height = Math.round(tv.cssH * dpr);
  canvas.style.width = `${tv.cssW}px`;
  canvas.style.height = `${tv.cssH}px`;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  if (tv.scale) {
    tv.scale.left = GUTTER;
    tv.scale.width = tv.cssW - GUTTER;
  }
  redraw();
}
