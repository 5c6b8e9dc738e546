// The DOM building blocks of the app's pages: a panel with its "Table" view (the text
// alternative of every chart), ranked bars, one bar split in shares, a plain table, and the queue
// that draws panels a frame's budget at a time. No chart library: a page that draws only these
// (the Profile page, but for its Memory tab) loads no uPlot; charts.js (uPlot's time series and
// histograms) re-exports them for the pages that draw both. Nothing here aggregates.
import { el, fill } from "./common.js";

/**
 * Ranked horizontal bars: rows [{label, value, text, href, title, colorIndex}]. `value` sets the bar
 * length relative to the largest (or to `max`, e.g. 100 for percentages); `text` is what is printed (the engine's figure, formatted).
 */
export function barList(node, rows, { empty = "Nothing to show.", max: scaleMax } = {}) {
  if (!rows.length) return fill(node, el("p", { class: "empty" }, empty));
  const max = scaleMax || Math.max(...rows.map((r) => r.value), 0) || 1;
  const grid = el("div", { class: "bars", role: "list" });
  for (const r of rows) {
    const fillBar = el("div", { class: `fill sw${(r.colorIndex ?? 0) % 8}` });
    fillBar.style.width = `${(100 * Math.max(0, r.value)) / max}%`; // CSSOM, allowed by the CSP
    grid.append(
      r.href
        ? el("a", { class: "label", href: r.href, title: r.title || r.label, role: "listitem" }, r.label)
        : el("span", { class: "label", title: r.title || r.label, role: "listitem" }, r.label),
      el("div", { class: "track", "aria-hidden": "true" }, fillBar),
      el("span", { class: "value" }, r.text),
    );
  }
  return fill(node, grid);
}

/** One bar split in shares: parts [{label, value, text}] with a legend (value = share weight). */
export function stackBar(node, parts, { empty = "Nothing to show." } = {}) {
  const total = parts.reduce((s, p) => s + Math.max(0, p.value || 0), 0);
  if (!total) return fill(node, el("p", { class: "empty" }, empty));
  const bar = el("div", { class: "stack", role: "img", "aria-label": parts.map((p) => `${p.label} ${p.text}`).join(", ") });
  parts.forEach((p, i) => {
    const part = el("div", { class: `sw${(p.colorIndex ?? i) % 8}`, title: `${p.label}: ${p.text}` });
    part.style.width = `${(100 * Math.max(0, p.value || 0)) / total}%`;
    bar.append(part);
  });
  const legend = el(
    "div",
    { class: "legend" },
    parts.map((p, i) => el("span", {}, el("i", { class: `sw${(p.colorIndex ?? i) % 8}` }), `${p.label} `, el("b", {}, p.text))),
  );
  return fill(node, bar, legend);
}

/** A plain table: columns [{label, num, get(row) -> text|Node, raw(row) -> the unformatted value}]. */
export function dataTable(columns, rows, { rowClass } = {}) {
  return el(
    "div",
    { class: "table-wrap" },
    el(
      "table",
      {},
      el("thead", {}, el("tr", {}, columns.map((c) => el("th", { scope: "col", class: c.num ? "num" : "" }, c.label)))),
      el(
        "tbody",
        {},
        rows.length
          ? rows.map((r) => el("tr", { class: rowClass ? rowClass(r) : "" }, columns.map((c) => el("td", { class: c.num ? "num" : "", "data-raw": c.raw ? c.raw(r) : undefined }, c.get(r)))))
          : el("tr", {}, el("td", { colspan: columns.length, class: "muted" }, "No rows.")),
      ),
    ),
  );
}

/**
 * A dashboard panel: title, optional tools, a chart area and its table view behind a toggle.
 * `draw(node)` draws the chart; `table()` returns the table node. `empty` (a string) replaces
 * both when the engine has nothing for this panel.
 */
export function panel({ id, title, note, wide, draw, table, tools = [], empty }) {
  const body = el("div", { class: "chart" });
  const tableBox = el("div", { class: "table-view hidden" });
  const toggle = table
    ? el("button", { type: "button", class: "table-toggle", "aria-pressed": "false", "aria-controls": `${id}-table` }, "Table")
    : null;
  const node = el(
    "section",
    { class: `panel${wide ? " wide" : ""}`, id, "aria-labelledby": `${id}-title` },
    el("div", { class: "panel-head" }, el("h2", { id: `${id}-title` }, title), el("div", { class: "tools" }, tools, toggle)),
    note ? el("p", { class: "note" }, note) : null,
    body,
    tableBox,
  );
  tableBox.id = `${id}-table`;
  if (empty) {
    node.dataset.empty = "true";
    fill(body, el("p", { class: "empty" }, empty));
    toggle?.remove();
    return node;
  }
  node.dataset.empty = "false";
  // Draw once attached (uPlot needs the width); the table is built on first open.
  queueDraw(() => draw(body));
  toggle?.addEventListener("click", () => {
    const showTable = toggle.getAttribute("aria-pressed") !== "true";
    toggle.setAttribute("aria-pressed", String(showTable));
    if (showTable && !tableBox.firstChild) tableBox.append(table());
    tableBox.classList.toggle("hidden", !showTable);
    body.classList.toggle("hidden", showTable);
  });
  return node;
}

// Panels draw in the order they were made, from the next frame on, as many a frame as fit in
// FRAME_BUDGET_MS, the rest in the frames after: the first panels (a job of many ranks: its
// overview) are on screen before the last are drawn, instead of all in one long frame.
const FRAME_BUDGET_MS = 12;
const drawQueue = [];

function queueDraw(fn) {
  drawQueue.push(fn);
  if (drawQueue.length === 1) requestAnimationFrame(drawSome);
}

function drawOne() {
  const fn = drawQueue.shift();
  try {
    fn();
  } catch (error) {
    queueMicrotask(() => {
      throw error; // reported as the page's error, as a failing frame callback was
    });
  }
}

function drawSome() {
  const start = performance.now();
  while (drawQueue.length && performance.now() - start < FRAME_BUDGET_MS) drawOne();
  if (drawQueue.length) requestAnimationFrame(drawSome);
}

/** Draw the queued panels now, in this task: a page that replaces panels under the user's hands
 * (a live refresh) leaves no frame in which a key press finds the old chart gone and the new one
 * not drawn yet. */
export function drawQueuedNow() {
  while (drawQueue.length) drawOne();
}

/** Forget the panels not drawn yet (before the page redraws them). */
export function dropQueuedDraws() {
  drawQueue.length = 0;
}
