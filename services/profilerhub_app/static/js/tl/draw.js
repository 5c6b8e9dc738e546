// The timeline's canvas renderer. It draws one frame from what is cached: the ruler and step
// markers, per group a header and its utilisation track, per lane its events (one Path2D per
// colour, filled once: no per-event fill calls, no DOM node per event) and merged blocks, the
// counter tracks, the selection with its launch arrows, and a box selection. At device-pixel
// resolution; the caller schedules frames (one requestAnimationFrame for all).

export const GUTTER = 230; // lane names (CSS px)
export const RULER = 30;
export const ROW = 17; // one flame-chart row
export const GROUP = 22;
export const TRACK = 26; // a counter / utilisation track
const MAX_ROWS = 24;

// Okabe-Ito, each with the text colour readable on it.
const PALETTE = [
  ["#0072b2", "#ffffff"],
  ["#e69f00", "#000000"],
  ["#009e73", "#ffffff"],
  ["#cc79a7", "#000000"],
  ["#56b4e9", "#000000"],
  ["#d55e00", "#ffffff"],
  ["#f0e442", "#000000"],
];
const KIND_COLOURS = { memcpy: 5, memset: 3, sync: 6, gpu_memcpy: 5, gpu_memset: 3 };

/** Colour index of an event: memory ops and syncs by kind, the rest by name (stable). */
export function colourOf(nameId, kindName) {
  for (const [key, c] of Object.entries(KIND_COLOURS)) if (kindName && kindName.includes(key)) return c;
  return (Math.imul(nameId + 1, 2654435761) >>> 0) % 5; // 0..4: memory colours stay distinct
}

/** Lay lanes out top to bottom: rows with y and height, in the user's group order. */
export function layout(lanesInfo, view) {
  const rows = [];
  let y = RULER;
  const counterNames = new Map(lanesInfo.counters.map((c) => [c.counter_id, c]));
  const usedCounters = new Set();
  for (const group of view.groups) {
    rows.push({ type: "group", y, h: GROUP, group });
    y += GROUP;
    if (view.collapsed.has(group.key)) continue;
    if (group.util_counter !== undefined && group.util_counter !== null && counterNames.has(group.util_counter)) {
      usedCounters.add(group.util_counter);
      rows.push({ type: "counter", y, h: TRACK, counter: counterNames.get(group.util_counter), util: true });
      y += TRACK;
    }
    for (const lane of group.lanes) {
      if (view.hidden.has(lane.lane_id)) continue;
      const depth = Math.max(1, Math.min(lane.rows || 1, MAX_ROWS));
      rows.push({ type: "lane", y, h: depth * ROW + 4, lane, group });
      y += depth * ROW + 4;
    }
  }
  const others = lanesInfo.counters.filter((c) => !usedCounters.has(c.counter_id));
  if (others.length) {
    const group = { key: "counters", name: "Counters", lanes: [] };
    rows.push({ type: "group", y, h: GROUP, group });
    y += GROUP;
    if (!view.collapsed.has("counters")) {
      for (const counter of others) {
        rows.push({ type: "counter", y, h: TRACK, counter });
        y += TRACK;
      }
    }
  }
  return { rows, height: y + 8 };
}

function niceStep(span, target) {
  const raw = span / target;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

export function formatNs(t, step = 1) {
  const a = Math.abs(step);
  if (a >= 1e9) return `${(t / 1e9).toFixed(Math.max(0, -Math.floor(Math.log10(step / 1e9))))} s`;
  if (a >= 1e6) return `${(t / 1e6).toFixed(Math.max(0, -Math.floor(Math.log10(step / 1e6))))} ms`;
  if (a >= 1e3) return `${(t / 1e3).toFixed(Math.max(0, -Math.floor(Math.log10(step / 1e3))))} µs`;
  return `${Math.round(t)} ns`;
}

/**
 * Draw one frame. `s`: the TimeScale; `pieces`: `[{w, t0, t1}]`, windows each drawn inside its
 * time range (the cache's plan; may be empty); `st`: {lanesInfo, layout, scrollY, selection,
 * arrows, box, colours, theme}. Returns the number of items drawn.
 */
export function drawFrame(ctx, cssW, cssH, s, pieces, st) {
  const theme = st.theme;
  ctx.fillStyle = theme.panel;
  ctx.fillRect(0, 0, cssW, cssH);
  ctx.font = "11.5px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  let drawn = 0;
  const yOf = (row) => row.y - st.scrollY;

  // Tracks area, clipped right of the gutter and below the ruler.
  ctx.save();
  ctx.beginPath();
  ctx.rect(GUTTER, RULER, cssW - GUTTER, cssH - RULER);
  ctx.clip();
  for (const row of st.layout.rows) {
    const y = yOf(row);
    if (row.type !== "group" || y > cssH || y + row.h < RULER) continue;
    ctx.fillStyle = theme.panel2;
    ctx.fillRect(GUTTER, y, cssW - GUTTER, row.h);
  }
  const seen = new Set(); // events are exact at any resolution: each is drawn once, whole
  for (const piece of pieces) {
    // Whole pixels, so side-by-side pieces meet without a seam.
    const x0 = Math.round(Math.max(GUTTER, s.x(piece.t0)));
    const x1 = Math.round(Math.min(cssW, s.x(piece.t1)));
    if (x1 > x0) drawn += drawWindow(ctx, cssW, cssH, s, piece.w, st, x0, x1, seen);
  }

  // Step markers.
  ctx.strokeStyle = theme.muted;
  ctx.setLineDash([3, 4]);
  ctx.lineWidth = 1;
  for (const step of st.lanesInfo.steps || []) {
    const x = Math.round(s.x(step.start)) + 0.5;
    if (x < GUTTER || x > cssW) continue;
    ctx.beginPath();
    ctx.moveTo(x, RULER);
    ctx.lineTo(x, cssH);
    ctx.stroke();
  }
  ctx.setLineDash([]);

  // Box selection.
  if (st.box) {
    const x0 = s.x(Math.min(st.box.a, st.box.b));
    const x1 = s.x(Math.max(st.box.a, st.box.b));
    ctx.fillStyle = theme.selectFill;
    ctx.fillRect(x0, RULER, x1 - x0, cssH - RULER);
    ctx.strokeStyle = theme.accent;
    ctx.strokeRect(x0 + 0.5, RULER + 0.5, x1 - x0 - 1, cssH - RULER - 1);
  }

  // Selected event and launch arrows.
  if (st.selection) {
    const r = st.eventRect(st.selection);
    if (r) {
      ctx.lineWidth = 2;
      ctx.strokeStyle = theme.focus;
      ctx.strokeRect(r.x - 1, r.y - 1, Math.max(r.w, 2) + 2, r.h + 2);
    }
    for (const [from, to] of st.arrows) {
      const a = st.eventRect(from);
      const b = st.eventRect(to);
      if (a && b) arrow(ctx, a.x, a.y + a.h / 2, b.x, b.y + b.h / 2, theme.focus);
    }
  }
  ctx.restore();

  // Gutter: lane names and group headers.
  ctx.fillStyle = theme.bg;
  ctx.fillRect(0, RULER, GUTTER, cssH - RULER);
  for (const row of st.layout.rows) {
    const y = yOf(row);
    if (y > cssH || y + row.h < RULER) continue;
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, RULER, cssW, cssH - RULER);
    ctx.clip();
    if (row.type === "group") {
      ctx.fillStyle = theme.panel2;
      ctx.fillRect(0, y, GUTTER, row.h);
      ctx.fillStyle = theme.text;
      ctx.font = "600 12px system-ui, sans-serif";
      const mark = st.collapsed.has(row.group.key) ? "▸" : "▾";
      ctx.fillText(fit(ctx, `${mark} ${row.group.name}`, GUTTER - 12), 8, y + row.h / 2);
      ctx.font = "11.5px system-ui, sans-serif";
    } else {
      ctx.fillStyle = theme.muted;
      const label = row.type === "lane" ? row.lane.name : row.counter.name;
      ctx.fillText(fit(ctx, label, GUTTER - 24), 18, y + Math.min(row.h, ROW + 4) / 2 + 1);
    }
    ctx.strokeStyle = theme.line;
    ctx.beginPath();
    ctx.moveTo(0, Math.round(y + row.h) + 0.5);
    ctx.lineTo(cssW, Math.round(y + row.h) + 0.5);
    ctx.stroke();
    ctx.restore();
  }

  // Ruler.
  ctx.fillStyle = theme.panel2;
  ctx.fillRect(0, 0, cssW, RULER);
  ctx.strokeStyle = theme.line;
  ctx.beginPath();
  ctx.moveTo(0, RULER - 0.5);
  ctx.lineTo(cssW, RULER - 0.5);
  ctx.stroke();
  const step = niceStep(s.span, Math.max(2, (cssW - GUTTER) / 110));
  ctx.fillStyle = theme.muted;
  ctx.strokeStyle = theme.muted;
  for (let t = Math.ceil(s.start / step) * step; t <= s.end; t += step) {
    const x = Math.round(s.x(t)) + 0.5;
    if (x < GUTTER) continue;
    ctx.beginPath();
    ctx.moveTo(x, RULER - 7);
    ctx.lineTo(x, RULER);
    ctx.stroke();
    ctx.fillText(formatNs(t, step), x + 3, RULER - 12);
  }
  ctx.fillStyle = theme.text;
  for (const st2 of st.lanesInfo.steps || []) {
    const x = s.x(st2.start);
    const x1 = s.x(st2.end);
    if (x1 < GUTTER || x > cssW || x1 - x < 40) continue;
    ctx.fillText(`step ${st2.step}`, Math.max(x, GUTTER) + 3, 8);
  }
  ctx.fillStyle = theme.muted;
  ctx.fillText(`${formatNs(s.span, s.span / 10)} shown`, 8, RULER / 2);
  return drawn;
}

/** One path per palette colour, where a rect that touches the last one of its row and colour
 * (within half a pixel, no gap a person could see) extends it instead of adding one: zoomed out
 * over a sparse trace (1 M events), a row of events a few pixels wide each is then one rect to
 * rasterise instead of hundreds, which is what made its frames slower than a dense 10 M trace's
 * (there the window's blocks are already merged). Same pixels covered, fewer primitives. */
class RowRuns {
  constructor(height) {
    this.height = height;
    this.paths = PALETTE.map(() => new Path2D());
    this.open = PALETTE.map(() => new Map()); // colour -> row top -> [x0, x1]
  }

  add(colour, x0, y, width) {
    const open = this.open[colour];
    const run = open.get(y);
    const x1 = x0 + width;
    if (run !== undefined && x0 >= run[0] && x0 <= run[1] + 0.5) {
      if (x1 > run[1]) run[1] = x1;
      return;
    }
    if (run !== undefined) this.paths[colour].rect(run[0], y, run[1] - run[0], this.height);
    open.set(y, [x0, x1]);
  }

  /** The paths, every open run in them. */
  done() {
    this.open.forEach((open, colour) => {
      for (const [y, run] of open) this.paths[colour].rect(run[0], y, run[1] - run[0], this.height);
      open.clear();
    });
    return this.paths;
  }
}

/** One window's lanes and counters: its blocks and counter runs between CSS x `left` and
 * `right` only (they are merged at its resolution), its events not drawn yet wherever they lie. */
function drawWindow(ctx, cssW, cssH, s, w, st, left, right, seen) {
  const theme = st.theme;
  const eventRuns = new RowRuns(ROW - 2);
  const blockRuns = new RowRuns(ROW - 2);
  const labels = [];
  const kinds = st.lanesInfo.kinds || {};
  let drawn = 0;
  for (const row of st.layout.rows) {
    const y = row.y - st.scrollY;
    if (row.type === "group" || y > cssH || y + row.h < RULER) continue;
    if (row.type === "counter") {
      ctx.save();
      ctx.beginPath();
      ctx.rect(left, y, right - left, row.h);
      ctx.clip();
      drawn += drawCounter(ctx, s, w, row, y, theme);
      ctx.restore();
      continue;
    }
    const slice = w.lanes.get(row.lane.lane_id);
    if (!slice) continue;
    const c = w.cols;
    for (let i = slice.ev[0]; i < slice.ev[1]; i++) {
      const t = w.t0 + c.ev_start[i];
      let x0 = s.x(t);
      let x1 = s.x(t + c.ev_dur[i]);
      if (x1 < GUTTER || x0 > cssW || seen.has(c.ev_id[i])) continue;
      seen.add(c.ev_id[i]);
      const depth = c.ev_depth[i];
      if (depth >= MAX_ROWS) continue;
      x0 = Math.max(x0, GUTTER - 2);
      x1 = Math.min(x1, cssW + 2);
      const width = Math.max(x1 - x0, 0.75);
      const ry = y + 2 + depth * ROW;
      const colour = colourOf(c.ev_name[i], kinds[c.ev_kind[i]]);
      eventRuns.add(colour, x0, ry, width);
      if (width > 36) labels.push([x0, ry, width, c.ev_name[i], colour]);
      drawn += 1;
    }
    for (let i = slice.bl[0]; i < slice.bl[1]; i++) {
      const x0 = Math.max(s.x(w.t0 + c.bl_start[i]), left - 2);
      const x1 = Math.min(s.x(w.t0 + c.bl_end[i]), right + 2);
      if (x1 < left || x0 > right) continue;
      const depth = c.bl_depth[i];
      if (depth >= MAX_ROWS) continue;
      const colour = colourOf(c.bl_name[i], kinds[c.bl_kind[i]]);
      blockRuns.add(colour, x0, y + 2 + depth * ROW, Math.max(x1 - x0, 0.75));
      drawn += 1;
    }
  }
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, RULER, right - left, cssH - RULER);
  ctx.clip();
  ctx.globalAlpha = 0.55;
  blockRuns.done().forEach((path, i) => {
    ctx.fillStyle = PALETTE[i][0];
    ctx.fill(path);
  });
  ctx.restore();
  eventRuns.done().forEach((path, i) => {
    ctx.fillStyle = PALETTE[i][0];
    ctx.fill(path);
  });
  for (const [x0, ry, width, nameId, colour] of labels) {
    const name = w.names.get(nameId) || st.names.get(nameId) || "";
    const start = Math.max(x0, GUTTER) + 3;
    const room = Math.min(x0 + width, cssW) - start - 3;
    if (room < 14) continue;
    ctx.fillStyle = PALETTE[colour][1];
    ctx.fillText(fit(ctx, name, room), start, ry + (ROW - 2) / 2);
  }
  return drawn;
}

function drawCounter(ctx, s, w, row, y, theme) {
  const range = w.counters.get(row.counter.counter_id);
  if (!range) return 0;
  const c = w.cols;
  let max = row.util ? 100 : 0;
  if (!row.util) for (let i = range[0]; i < range[1]; i++) max = Math.max(max, c.ct_max[i]);
  if (max <= 0) max = 1;
  const h = row.h - 4;
  const area = new Path2D();
  const top = y + 2;
  for (let i = range[0]; i < range[1]; i++) {
    const t = w.t0 + c.ct_column[i] * w.nsPerPx;
    const x0 = s.x(t);
    const x1 = s.x(t + c.ct_span[i] * w.nsPerPx);
    if (x1 < GUTTER || x0 > ctx.canvas.width) continue;
    const v = c.ct_mean[i] / max;
    area.rect(x0, top + h * (1 - v), Math.max(x1 - x0, 0.75) + 0.5, h * v); // +0.5: no hairline between runs or pieces
  }
  ctx.fillStyle = row.util ? theme.util : theme.counter;
  ctx.fill(area);
  return range[1] - range[0];
}

function arrow(ctx, x0, y0, x1, y1, colour) {
  ctx.strokeStyle = colour;
  ctx.fillStyle = colour;
  ctx.lineWidth = 1.5;
  const dy = Math.max(30, Math.abs(y1 - y0) / 2);
  ctx.beginPath();
  ctx.moveTo(x0, y0);
  ctx.bezierCurveTo(x0, y0 + Math.sign(y1 - y0 || 1) * dy, x1, y1 - Math.sign(y1 - y0 || 1) * dy, x1, y1);
  ctx.stroke();
  const angle = Math.atan2(Math.sign(y1 - y0 || 1) * dy, 0.0001);
  ctx.beginPath();
  ctx.moveTo(x1, y1);
  ctx.lineTo(x1 - 7 * Math.cos(angle - 0.45), y1 - 7 * Math.sin(angle - 0.45));
  ctx.lineTo(x1 - 7 * Math.cos(angle + 0.45), y1 - 7 * Math.sin(angle + 0.45));
  ctx.closePath();
  ctx.fill();
}

const fitCache = new Map();
function fit(ctx, text, room) {
  const key = `${text}|${Math.floor(room / 8)}`;
  let out = fitCache.get(key);
  if (out !== undefined) return out;
  out = text;
  if (ctx.measureText(text).width > room) {
    let lo = 0;
    let hi = text.length;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (ctx.measureText(`${text.slice(0, mid)}…`).width <= room) lo = mid;
      else hi = mid - 1;
    }
    out = lo ? `${text.slice(0, lo)}…` : "";
  }
  if (fitCache.size > 5000) fitCache.clear();
  fitCache.set(key, out);
  return out;
}

/** Hit test: the event or block under (x, y) in `row` of window `w`: {id, block} or null. */
export function hitTest(s, w, row, x, y) {
  if (!w || row.type !== "lane") return null;
  const slice = w.lanes.get(row.lane.lane_id);
  if (!slice) return null;
  const depth = Math.floor((y - row.y - 2) / ROW);
  const c = w.cols;
  let best = null;
  for (let i = slice.ev[0]; i < slice.ev[1]; i++) {
    if (c.ev_depth[i] !== depth) continue;
    const t = w.t0 + c.ev_start[i];
    const x0 = s.x(t);
    const x1 = Math.max(s.x(t + c.ev_dur[i]), x0 + 3);
    if (x >= x0 - 1 && x <= x1 + 1) {
      if (!best || c.ev_dur[i] < best.dur) best = { id: c.ev_id[i], dur: c.ev_dur[i], block: false };
    }
  }
  if (best) return best;
  for (let i = slice.bl[0]; i < slice.bl[1]; i++) {
    if (c.bl_depth[i] !== depth) continue;
    const x0 = s.x(w.t0 + c.bl_start[i]);
    const x1 = Math.max(s.x(w.t0 + c.bl_end[i]), x0 + 3);
    if (x >= x0 - 1 && x <= x1 + 1) {
      return { id: c.bl_id[i], block: true, start: w.t0 + c.bl_start[i], end: w.t0 + c.bl_end[i], count: c.bl_count[i] };
    }
  }
  return null;
}
