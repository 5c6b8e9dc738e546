// A heat map on one canvas: rows × columns of the engine's numbers, coloured with viridis
// (perceptually uniform, readable with every common colour-vision deficiency) on a log10 scale
// of |value| by default. The cells are the pixels of one image drawn scaled (a few canvas calls for any
// number of cells); no DOM node per cell.
// Keyboard: the canvas is focusable; arrow keys move the current cell, Home/End jump along the
// row, Enter or Space picks it (as a click does). `highlight(c0, c1)` outlines a column range.
import { cssVar, el } from "./common.js";

// matplotlib's viridis at 11 even stops (public domain colour map data).
const VIRIDIS = [
  [68, 1, 84], [72, 36, 117], [65, 68, 135], [53, 95, 141], [42, 120, 142], [33, 145, 140],
  [34, 168, 132], [68, 191, 112], [122, 209, 81], [189, 223, 38], [253, 231, 37],
]; // fmt: skip

function viridisRgb(t) {
  const x = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const f = x - i;
  return VIRIDIS[i].map((a, k) => Math.round(a + (VIRIDIS[i + 1][k] - a) * f));
}

/** The viridis colour at t in [0, 1], as "rgb(r,g,b)". */
export function viridis(t) {
  const c = viridisRgb(t);
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

// 256 levels of viridis as RGB bytes: the cells are drawn as the pixels of one image.
const LEVELS = 256;
const PALETTE = new Uint8Array(LEVELS * 3);
for (let i = 0; i < LEVELS; i++) PALETTE.set(viridisRgb(i / (LEVELS - 1)), i * 3);

/** `css` colour ("#rgb", "#rrggbb" or "rgb(r, g, b)") as [r, g, b]; grey when unreadable. */
function rgbOf(css) {
  const probe = document.createElement("canvas").getContext("2d");
  probe.fillStyle = css || "#ddd";
  probe.fillRect(0, 0, 1, 1);
  return [...probe.getImageData(0, 0, 1, 1).data.slice(0, 3)];
}

/** [lo, hi] of the finite, positive (log) values, or null. */
function extent(values, log) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const row of values) {
    for (const v of row) {
      if (v === null || v === undefined) continue;
      const x = log ? (Math.abs(v) > 0 ? Math.log10(Math.abs(v)) : null) : v;
      if (x === null || !Number.isFinite(x)) continue;
      if (x < lo) lo = x;
      if (x > hi) hi = x;
    }
  }
  return lo <= hi ? [lo, hi === lo ? lo + 1 : hi] : null;
}

/**
 * Draw `values[row][col]` into `node`. `rows`, `cols`: labels; `onPick(row, col)` on click/Enter;
 * `onHover(row, col)` as the cursor or the keyboard moves. `colWord` names a column in the
 * readout ("step" by default); `domain` fixes the colour scale's [lo, hi] (else the values'
 * extent); `marks[row]` lists column positions (fractional) where a thin tick is drawn (e.g. the
 * rank's step starts). Returns {canvas, rows, cols, cursor, moveTo, highlight}.
 */
export function heatMap(node, { rows, cols, values, log = true, label = "value", onPick, onHover, cell = 12, colWord = "step", domain = null, marks = null }) {
  const nameWidth = 180;
  const room = Math.max(200, (node.clientWidth || 1000) - nameWidth - 8);
  const cw = Math.max(2, Math.min(cell, Math.floor(room / Math.max(1, cols.length))));
  const ch = rows.length <= 16 ? 20 : Math.max(6, Math.min(18, cell));
  const width = nameWidth + cw * cols.length + 4;
  const height = ch * rows.length + 24;
  const ratio = window.devicePixelRatio || 1;
  const canvas = el("canvas", {
    width: Math.ceil(width * ratio),
    height: Math.ceil(height * ratio),
    tabindex: "0",
    role: "img",
    "aria-label": `heat map of ${label}: ${rows.length} rows by ${cols.length} ${colWord}s; arrow keys move, Enter opens a cell`,
    class: "heat",
  });
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const range = domain || extent(values, log);
  const state = { row: 0, col: Math.max(0, cols.length - 1), band: null };
  const legend = el("div", { class: "heat-legend" });
  const readout = el("div", { class: "heat-readout", "aria-live": "polite" });
  node.append(el("div", { class: "heat-wrap" }, canvas), legend, readout);
  drawLegend(legend, range, log, label);

  /** The palette level (0..255) of a value, or -1 for none. */
  function levelOf(v) {
    if (v === null || v === undefined || !range) return -1;
    const x = log ? (Math.abs(v) > 0 ? Math.log10(Math.abs(v)) : range[0]) : v;
    const t = Math.min(1, Math.max(0, (x - range[0]) / (range[1] - range[0])));
    return Number.isFinite(t) ? Math.round(t * (LEVELS - 1)) : -1;
  }

  let image = null; // the cells' image, made once (the values do not change)
  function cells() {
    if (image) return image;
    image = document.createElement("canvas");
    image.width = cols.length;
    image.height = rows.length;
    const ig = image.getContext("2d");
    const data = ig.createImageData(cols.length, rows.length);
    const px = data.data;
    const empty = rgbOf(cssVar("--line"));
    for (let r = 0; r < rows.length; r++) {
      const row = values[r] || [];
      for (let c = 0; c < cols.length; c++) {
        const level = levelOf(row[c]);
        const o = (r * cols.length + c) * 4;
        if (level < 0) px.set(empty, o);
        else px.set(PALETTE.subarray(level * 3, level * 3 + 3), o);
        px[o + 3] = 255;
      }
    }
    ig.putImageData(data, 0, 0);
    return image;
  }

  function draw() {
    const g = canvas.getContext("2d");
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, height);
    g.font = "11px system-ui, sans-serif";
    g.textBaseline = "middle";
    g.fillStyle = cssVar("--text") || "#222";
    const labelEvery = Math.ceil(12 / ch); // rows thinner than the text: a label every few rows
    rows.forEach((name, r) => {
      if (r % labelEvery) return;
      const text = name.length > 28 ? `…${name.slice(-27)}` : name;
      g.fillText(text, 2, r * ch + ch / 2);
    });
    // One pixel per cell in an image, drawn scaled to the cells (no smoothing), then the 1 px
    // gaps between rows: a few calls whatever the cell count, not one fillRect per cell.
    if (rows.length && cols.length) {
      g.imageSmoothingEnabled = false;
      g.drawImage(cells(), nameWidth, 0, cw * cols.length, ch * rows.length);
      g.fillStyle = cssVar("--panel") || "#fff";
      for (let r = 1; r <= rows.length; r++) g.fillRect(nameWidth, r * ch - 1, cw * cols.length, 1);
    }
    if (marks) {
      g.fillStyle = cssVar("--bg") || "#fff";
      marks.forEach((row, r) => {
        for (const c of row || []) if (c >= 0 && c <= cols.length) g.fillRect(nameWidth + c * cw, r * ch, 1, ch - 1);
      });
    }
    g.fillStyle = cssVar("--muted") || "#666";
    const every = Math.max(1, Math.ceil(60 / cw));
    for (let c = 0; c < cols.length; c += every) g.fillText(String(cols[c]), nameWidth + c * cw, rows.length * ch + 12);
    if (state.band) {
      g.strokeStyle = cssVar("--c1") || "#d55e00";
      g.lineWidth = 2;
      const [a, b] = state.band;
      g.strokeRect(nameWidth + a * cw + 1, 1, (b - a + 1) * cw - 2, rows.length * ch - 2);
    }
    if (document.activeElement === canvas && rows.length && cols.length) {
      g.strokeStyle = cssVar("--focus") || "#000";
      g.lineWidth = 2;
      g.strokeRect(nameWidth + state.col * cw, state.row * ch, cw, ch - 1);
    }
  }

  function say(r, c) {
    if (r < 0 || c < 0 || r >= rows.length || c >= cols.length) return;
    const v = values[r][c];
    readout.textContent = `${rows[r]} · ${colWord} ${cols[c]} · ${label} ${v === null || v === undefined ? "–" : v.toPrecision(4)}`;
    onHover?.(r, c);
  }

  function at(event) {
    const box = canvas.getBoundingClientRect();
    const c = Math.floor((event.clientX - box.left - nameWidth) / cw);
    const r = Math.floor((event.clientY - box.top) / ch);
    return r >= 0 && r < rows.length && c >= 0 && c < cols.length ? [r, c] : null;
  }

  canvas.addEventListener("mousemove", (e) => {
    const hit = at(e);
    if (hit) say(...hit);
  });
  canvas.addEventListener("click", (e) => {
    const hit = at(e);
    if (!hit) return;
    [state.row, state.col] = hit;
    draw();
    say(...hit);
    onPick?.(...hit);
  });
  canvas.addEventListener("focus", () => {
    draw();
    say(state.row, state.col);
  });
  canvas.addEventListener("blur", draw);
  canvas.addEventListener("keydown", (e) => {
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    if (moves[e.key]) {
      state.row = Math.min(rows.length - 1, Math.max(0, state.row + moves[e.key][0]));
      state.col = Math.min(cols.length - 1, Math.max(0, state.col + moves[e.key][1]));
    } else if (e.key === "Home") state.col = 0;
    else if (e.key === "End") state.col = cols.length - 1;
    else if (e.key === "Enter" || e.key === " ") onPick?.(state.row, state.col);
    else return;
    e.preventDefault();
    draw();
    say(state.row, state.col);
  });
  draw();
  return {
    canvas,
    rows,
    cols,
    /** The keyboard's current cell, [row, col]. */
    cursor: () => [state.row, state.col],
    /** Make (row, col) the keyboard's cell (ignored outside the map). */
    moveTo(r, c) {
      if (r < 0 || c < 0 || r >= rows.length || c >= cols.length) return;
      [state.row, state.col] = [r, c];
      draw();
    },
    /** Outline the columns whose step is within [s0, s1] (a finding's range). */
    highlight(s0, s1) {
      const a = cols.findIndex((s) => s >= s0);
      let b = -1;
      cols.forEach((s, i) => {
        if (s <= s1) b = i;
      });
      state.band = a >= 0 && b >= a ? [a, b] : null;
      draw();
    },
  };
}

function drawLegend(node, range, log, label) {
  const ramp = el("canvas", { width: 160, height: 10, "aria-hidden": "true" });
  const g = ramp.getContext("2d");
  for (let x = 0; x < 160; x++) {
    g.fillStyle = viridis(x / 159);
    g.fillRect(x, 0, 1, 10);
  }
  const fmt = (x) => (log ? `1e${x.toFixed(1)}` : String(Number(x.toPrecision(3))));
  node.append(
    el("span", {}, range ? fmt(range[0]) : "–"),
    ramp,
    el("span", {}, range ? fmt(range[1]) : "–"),
    el("span", { class: "muted" }, `${label}${log ? " (|value|, log scale)" : ""}; grey: not recorded`),
  );
}
