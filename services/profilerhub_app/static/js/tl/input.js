// Input on the canvas: wheel (zoom at the cursor; shift = pan; over the lane names = scroll),
// drag (pan), shift-drag or a drag on the ruler (select a range), click (select an event, or zoom
// into a merged block), keys w/s (zoom) a/d and ←/→ (pan) ↑/↓ (scroll) f (fit) Esc (clear).
import { GUTTER, hitTest, RULER } from "./draw.js";
import { redraw } from "./frame.js";
import { clampScroll, toggleGroup } from "./lanes.js";
import { clearSelection, fit, fitTo, select, showBox } from "./selection.js";
import { tv } from "./state.js";

function rowAt(y) {
  const yy = y + tv.scrollY;
  return tv.layout.rows.find((r) => yy >= r.y && yy < r.y + r.h);
}

function at(e) {
  const rect = tv.dom.view.getBoundingClientRect();
  return [e.clientX - rect.left, e.clientY - rect.top];
}

function click(x, y) {
  const { scale } = tv;
  const row = rowAt(y);
  if (!row) return;
  if (row.type === "group" && x < GUTTER) return toggleGroup(row.group.key);
  if (x < GUTTER) return;
  const t = scale.t(x);
  const piece = tv.cache.plan(scale.start, scale.end, scale.nsPerPx).pieces.find((p) => t >= p.t0 && t < p.t1);
  const hit = hitTest(scale, piece ? piece.w : null, { ...row, y: row.y - tv.scrollY }, x, y);
  if (!hit) return clearSelection();
  tv.box = null;
  if (hit.block && hit.count > 1) {
    fitTo(hit.start, hit.end); // a merged block: zoom into it
    return;
  }
  select(hit.id);
}

function onKey(e) {
  const { scale } = tv;
  if (!scale || e.ctrlKey || e.metaKey || e.altKey) return;
  const anchor = tv.mouseX !== null && tv.mouseX > GUTTER ? tv.mouseX : undefined;
  const width = tv.cssW - GUTTER;
  const scroll = (dy) => () => {
    tv.scrollY += dy;
    clampScroll();
  };
  const keys = {
    w: () => scale.zoom(0.7, anchor),
    s: () => scale.zoom(1 / 0.7, anchor),
    a: () => scale.pan(-width * 0.2),
    d: () => scale.pan(width * 0.2),
    ArrowLeft: () => scale.pan(-width * 0.1),
    ArrowRight: () => scale.pan(width * 0.1),
    ArrowUp: scroll(-60),
    ArrowDown: scroll(60),
    f: fit,
    Escape: clearSelection,
  };
  const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
  if (!keys[key]) return;
  e.preventDefault();
  keys[key]();
  redraw();
}

/** Listen to the canvas's pointer, wheel and keys (and the page's keys outside its controls). */
export function installInput() {
  const view = tv.dom.view;
  view.addEventListener("pointerdown", (e) => {
    if (e.button !== 0) return;
    view.focus({ preventScroll: true });
    const [x, y] = at(e);
    tv.drag = { x0: x, y0: y, x, y, box: e.shiftKey || y < RULER, moved: false, scroll0: tv.scrollY };
    if (tv.drag.box && x > GUTTER) tv.box = { a: tv.scale.t(x), b: tv.scale.t(x) };
    view.setPointerCapture(e.pointerId);
  });
  view.addEventListener("pointermove", (e) => {
    const drag = tv.drag;
    if (!drag) return;
    const [x, y] = at(e);
    if (Math.abs(x - drag.x0) + Math.abs(y - drag.y0) > 3) drag.moved = true;
    if (drag.box && tv.box) tv.box.b = tv.scale.t(Math.max(GUTTER, x));
    else if (drag.moved) {
      tv.scale.pan(drag.x - x);
      tv.scrollY = drag.scroll0 - (y - drag.y0);
      clampScroll();
      view.classList.add("dragging");
    }
    drag.x = x;
    drag.y = y;
    redraw();
  });
  view.addEventListener("pointerup", () => {
    const d = tv.drag;
    if (!d) return;
    tv.drag = null;
    view.classList.remove("dragging");
    if (d.box && tv.box) {
      if (Math.abs(tv.scale.x(tv.box.b) - tv.scale.x(tv.box.a)) < 3) tv.box = null;
      else showBox();
      redraw();
      return;
    }
    if (d.moved) return;
    click(d.x, d.y);
  });
  view.addEventListener(
    "wheel",
    (e) => {
      e.preventDefault();
      const [x] = at(e);
      if (x < GUTTER) {
        tv.scrollY += e.deltaY;
        clampScroll();
      } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        tv.scale.pan(e.shiftKey ? e.deltaY : e.deltaX);
      } else {
        tv.scale.zoom(Math.exp(e.deltaY * (e.deltaMode === 1 ? 0.05 : 0.0025)), x);
      }
      redraw();
    },
    { passive: false },
  );
  view.addEventListener("mousemove", (e) => {
    tv.mouseX = at(e)[0];
  });
  view.addEventListener("mouseleave", () => {
    tv.mouseX = null;
  });
  view.addEventListener("keydown", onKey);
  document.addEventListener("keydown", (e) => {
    if (e.target === view || ["INPUT", "SELECT", "TEXTAREA", "BUTTON"].includes(e.target.tagName)) return;
    onKey(e);
  });
}
