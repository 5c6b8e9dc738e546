// The Profile page's Modules tab: time per nn.Module as the model's tree (`tb_modules`, computed at
// ingest from traces recorded with stacks and modules: the SDK's torch_profiler="full"). Rows
// expand and collapse (a button per parent, aria-expanded); a module's name opens its calls in the
// timeline. The chart beside it is the top-level modules' share of the root's time.
import { barList, dataTable, panel } from "./blocks.js";
import { count, el, fill, us } from "./common.js";

const COLUMNS = [
  ["calls", "calls", count],
  ["operators", "operators", count],
  ["host_total_us", "host total", us],
  ["host_self_us", "host self", us],
  ["device_total_us", "device total", us],
  ["device_self_us", "device self", us],
  ["mean_us", "mean per call", us],
];

/** Each row of the tree in display order (depth first), with its depth and a path that names it. */
function flatten(roots) {
  const out = [];
  const todo = roots.map((m, i) => ({ m, depth: 0, path: String(i) })).reverse();
  while (todo.length) {
    const row = todo.pop();
    out.push(row);
    for (let i = row.m.children.length - 1; i >= 0; i -= 1) {
      todo.push({ m: row.m.children[i], depth: row.depth + 1, path: `${row.path}.${i}` });
    }
  }
  return out;
}

/** The tree's indentation (set through the CSSOM, which the pages' CSP allows, unlike style attributes). */
function indent(depth) {
  const span = el("span", { class: "mod-indent" });
  span.style.width = `${1.2 * Math.min(depth, 12)}em`;
  return span;
}

export function modulesTab(v, { section, timelineHref }) {
  const roots = v.tb_modules || [];
  if (!roots.length) {
    return [section("vw-modules", "Modules", el("p", { class: "empty" }, "No module events in this trace. Record with torch_profiler=\"full\" (or with_stack and with_modules) to see time per nn.Module."))];
  }
  const rows = flatten(roots);
  const anyDevice = rows.some((r) => r.m.device_total_us > 0);
  const columns = anyDevice ? COLUMNS : COLUMNS.filter(([key]) => !key.startsWith("device_")); // CPU-only: no device time
  const collapsed = new Set(rows.filter((r) => r.depth >= 2 && r.m.children.length).map((r) => r.path));
  const tbody = el("tbody", {});
  const hidden = (path) => [...collapsed].some((p) => path !== p && path.startsWith(`${p}.`));

  function draw() {
    fill(
      tbody,
      rows
        .filter((r) => !hidden(r.path))
        .map((r) => {
          const parent = r.m.children.length > 0;
          const toggle = parent
            ? el("button", { type: "button", class: "mod-toggle", "aria-expanded": String(!collapsed.has(r.path)), "aria-label": `${collapsed.has(r.path) ? "expand" : "collapse"} ${r.m.name}` }, collapsed.has(r.path) ? "▸" : "▾")
            : el("span", { class: "mod-leaf", "aria-hidden": "true" }, "·");
          if (parent) {
            toggle.addEventListener("click", () => {
              if (collapsed.has(r.path)) collapsed.delete(r.path);
              else collapsed.add(r.path);
              draw();
              tbody.querySelector(`tr[data-path="${r.path}"] .mod-toggle`)?.focus();
            });
          }
          const name = el("a", { href: timelineHref(`nn.Module: ${r.m.name}`), class: "cut", title: r.m.name }, r.m.name);
          return el(
            "tr",
            { "data-path": r.path, "data-depth": String(r.depth) },
            el("td", { class: "mod-name", "data-raw": r.m.name }, indent(r.depth), toggle, name),
            columns.map(([key, , fmt]) => el("td", { class: "num", "data-raw": r.m[key] }, fmt(r.m[key]))),
          );
        }),
    );
  }
  draw();
  const table = el(
    "div",
    { class: "table-wrap" },
    el("table", { class: "mod-tree" }, el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "module"), columns.map(([, label]) => el("th", { scope: "col", class: "num" }, label)))), tbody),
  );
  const key = anyDevice ? "device_total_us" : "host_total_us";
  const top = roots.length === 1 ? roots[0].children : roots;
  const parts = top.slice().sort((a, b) => b[key] - a[key]).slice(0, 12);
  return [
    panel({
      id: "vw-top-modules",
      title: `${roots.length === 1 ? `Inside ${roots[0].name}` : "Top modules"}: ${anyDevice ? "device" : "host"} time`,
      wide: true,
      draw: (n) => barList(n, parts.map((m, i) => ({ label: m.name, value: m[key], text: us(m[key]), href: timelineHref(`nn.Module: ${m.name}`), colorIndex: i % 8 }))),
      table: () => dataTable([{ label: "module", get: (m) => m.name }, { label: anyDevice ? "device total" : "host total", num: true, get: (m) => us(m[key]) }], parts),
    }),
    section("vw-modules", "Modules", table, "Summed over every call in the trace; a module its parent calls twice is one row. Self time is the module's own, outside its child modules and operators."),
  ];
}
