// A table the Profile page's tabs share: the reader sorts it (click a header) and filters it (the
// search box matches any text cell). Its sort and search live in a state object the caller owns
// (the page's URL state for the main table of a tab, a state of its own for a second table).
import { dataTable } from "./blocks.js";
import { count, el, fill } from "./common.js";

export const LIMIT = 500; // rows drawn per table (the search reaches all of them)

/**
 * A table the reader sorts (click a header) and filters (the search box matches any text cell).
 * `columns`: [{key, label, num, get(row) -> text|Node, value(row) -> what sorts}]; `state`: {q, sort,
 * desc}, changed in place; `changed()` is called after each change.
 */
export function tableView(columns, rows, { defaultSort, searchLabel = "Search", state, changed = () => {} }) {
  const box = el("div", {});
  const search = el("input", { type: "search", value: state.q, placeholder: "name contains…", "aria-label": searchLabel });
  const shown = el("span", { class: "muted", "aria-live": "polite" });
  const tableBox = el("div", {});
  const sortKey = () => (columns.some((c) => c.key === state.sort) ? state.sort : defaultSort);
  function draw() {
    const key = sortKey();
    const col = columns.find((c) => c.key === key);
    const needle = state.q.toLowerCase();
    const kept = needle
      ? rows.filter((r) => columns.some((c) => !c.num && String(c.value(r) ?? "").toLowerCase().includes(needle)))
      : rows.slice();
    const sign = state.desc ? -1 : 1;
    kept.sort((a, b) => {
      const x = col.value(a);
      const y = col.value(b);
      if (typeof x === "number" || typeof y === "number") return sign * ((x ?? -Infinity) - (y ?? -Infinity));
      return sign * String(x ?? "").localeCompare(String(y ?? ""));
    });
    shown.textContent = `${count(Math.min(kept.length, LIMIT))} of ${count(kept.length)} rows${needle ? ` matching "${state.q}"` : ""}`;
    const table = dataTable(
      columns.map((c) => ({ label: c.label, num: c.num, get: c.get, raw: (r) => c.value(r) })),
      kept.slice(0, LIMIT),
    );
    const heads = table.querySelectorAll("th");
    columns.forEach((c, i) => {
      const th = heads[i];
      th.setAttribute("aria-sort", c.key === key ? (state.desc ? "descending" : "ascending") : "none");
      const button = el("button", { type: "button", class: "sort", "data-sort": c.key }, c.label);
      button.addEventListener("click", () => {
        state.desc = c.key === key ? !state.desc : true;
        state.sort = c.key;
        changed();
        draw();
      });
      fill(th, button);
    });
    fill(tableBox, table);
  }
  search.addEventListener("input", () => {
    state.q = search.value;
    changed();
    draw();
  });
  draw();
  return fill(box, el("div", { class: "table-tools" }, el("label", {}, searchLabel, search), shown), tableBox);
}

