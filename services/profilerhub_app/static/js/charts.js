// The charts of the dashboard, compare, model and memory views: time series and histograms are
// uPlot (vendored, canvas); ranked lists, shares, panels and tables are DOM (blocks.js,
// re-exported here). Every chart sits in a panel whose "Table" button swaps it for a plain table
// of the same numbers: the text alternative. Nothing here aggregates: it draws the engine's
// numbers as given.
import uPlot from "../vendor/uplot/uPlot.esm.js";
import { dropQueuedDraws } from "./blocks.js";
import { color, cssVar } from "./common.js";

export { barList, dataTable, drawQueuedNow, panel, stackBar } from "./blocks.js";

const charts = new Set();
const compactFormat = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });
/** Axis numbers: 1.2K, 4.3B (the tooltip and tables keep the full figure). */
const compact = (v) => (Math.abs(v) >= 10000 ? compactFormat.format(v) : String(Math.round(v * 100) / 100)); // live uPlot instances, resized with their panel

const resizer = new ResizeObserver((entries) => {
  for (const entry of entries) {
    const chart = entry.target.uplot;
    if (chart) chart.setSize({ width: Math.max(200, entry.contentRect.width), height: chart.height });
  }
});

function axis(label, format) {
  return {
    label,
    stroke: cssVar("--muted"),
    grid: { stroke: cssVar("--line"), width: 1 },
    ticks: { stroke: cssVar("--line"), width: 1 },
    values: format ? (u, splits) => splits.map(format) : undefined,
    labelSize: label ? 20 : 0,
    size: (u, values, axisIdx) => (axisIdx === 0 ? 34 : 58),
    font: "12px system-ui, sans-serif",
    labelFont: "12px system-ui, sans-serif",
  };
}

function mount(node, options, data) {
  const width = Math.max(200, node.clientWidth || 480);
  const chart = new uPlot({ ...options, width, height: options.height || 220 }, data, node);
  node.uplot = chart;
  charts.add(chart);
  resizer.observe(node);
  return chart;
}

/**
 * A line chart. `x`: numbers; `series`: [{label, values, colorIndex, sparse}] (`sparse`: values at
 * some x only, joined across the gaps and marked with points). `onPick(x)` is called with
 * the x under the cursor when the user clicks the plot (used to jump to the timeline).
 * `onSelect(x0, x1)` is called when the user drags across the plot (the chart itself does not
 * zoom: the caller redraws it with `xRange: [x0, x1]`, the x axis's fixed span).
 */
export function lineChart(node, { x, series, xLabel, yLabel, xFormat, yFormat, yRange, xRange, onPick, onSelect, height, stepped }) {
  const options = {
    height,
    legend: { show: series.length > 1 },
    cursor: { drag: { x: Boolean(onSelect), y: false, setScale: false }, points: { size: 6 } },
    scales: { x: xRange ? { time: false, range: xRange } : { time: false }, y: yRange ? { range: yRange } : { auto: true } },
    axes: [axis(xLabel, xFormat), axis(yLabel, yFormat)],
    series: [
      { label: xLabel || "x", value: (u, v) => (v === null || v === undefined ? "–" : xFormat ? xFormat(v) : v) },
      ...series.map((s, i) => ({
        label: s.label,
        stroke: color(s.colorIndex ?? i),
        fill: series.length === 1 ? `${color(s.colorIndex ?? i)}22` : undefined,
        width: 1.5,
        paths: stepped ? uPlot.paths.stepped({ align: 1 }) : undefined,
        points: { show: x.length < 60 || Boolean(s.sparse) },
        spanGaps: Boolean(s.sparse), // a series recorded at some x only (eval losses): joined across them
        value: (u, v) => (v === null || v === undefined ? "–" : yFormat ? yFormat(v) : v),
      })),
    ],
  };
  if (!yRange) options.axes[1].values = (u, splits) => splits.map(compact);
  if (onSelect) {
    options.hooks = {
      setSelect: [
        (u) => {
          if (u.select.width < 3) return; // a click, not a drag
          const x0 = u.posToVal(u.select.left, "x");
          const x1 = u.posToVal(u.select.left + u.select.width, "x");
          u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
          onSelect(x0, x1);
        },
      ],
    };
  }
  const chart = mount(node, options, [x, ...series.map((s) => s.values)]);
  if (onSelect) chart.over.classList.add("selectable");
  if (onPick) {
    chart.over.classList.add("pickable");
    chart.over.title = "click to open the timeline here";
    chart.over.addEventListener("click", () => {
      const idx = chart.cursor.idx;
      if (idx !== null && idx !== undefined) onPick(x[idx], idx);
    });
  }
  return chart;
}

/** A histogram from `edges` (n+1, or n with the last bin open-ended) and `counts` (n). */
export function histogram(node, { edges, counts, xLabel, xFormat, height, colorIndex = 0 }) {
  const centres = counts.map((_, i) => i);
  const labels = counts.map((_, i) => {
    const lo = edges[i];
    const hi = edges[i + 1];
    return hi === undefined ? `≥ ${xFormat(lo)}` : `${xFormat(lo)} – ${xFormat(hi)}`;
  });
  const options = {
    height: height || 200,
    legend: { show: false },
    cursor: { drag: { x: false, y: false }, points: { show: false } },
    scales: { x: { time: false, range: [-0.5, counts.length - 0.5] }, y: { auto: true, range: (u, lo, hi) => [0, Math.max(1, hi * 1.08)] } },
    axes: [
      {
        ...axis(xLabel),
        // at most one label per ~110 px, so bin edges never overlap
        splits: (u) => {
          const room = Math.max(2, Math.floor(u.bbox.width / (window.devicePixelRatio || 1) / 110));
          const every = Math.ceil(counts.length / room);
          return centres.filter((i) => i % every === 0);
        },
        values: (u, splits) => splits.map((i) => (edges[i] === undefined ? "" : xFormat(edges[i]))),
      },
      axis("count"),
    ],
    series: [
      { label: "bin", value: (u, v) => (v === null ? "–" : labels[v] || "") },
      {
        label: "count",
        stroke: color(colorIndex),
        fill: `${color(colorIndex)}bb`,
        paths: uPlot.paths.bars({ size: [0.86, 60] }),
        points: { show: false },
      },
    ],
  };
  return mount(node, options, [centres, counts]);
}

/** Forget every chart (before the page redraws its panels) and the panels not drawn yet. */
export function clearCharts() {
  dropQueuedDraws();
  for (const chart of charts) {
    resizer.unobserve(chart.root.parentNode);
    chart.destroy();
  }
  charts.clear();
}
