// The lanes: their layout on the canvas, and the Lanes tree beside it (show/hide, collapse,
// reorder). Groups move among groups, lanes inside their group: by drag (tl/dnd.js), by the ↑/↓
// buttons of a group, or Alt+↑/↓ on a focused group or lane. The URL keeps both orders.
import { count, el, fill } from "../common.js";
import { dragHandlers, moveItem } from "./dnd.js";
import { layout } from "./draw.js";
import { redraw } from "./frame.js";
import { tv } from "./state.js";

export function groupKey(group, i) {
  if (group.kind === "host") return `host-${group.pid}`;
  if (group.kind === "gpu") return `gpu-${group.device}`;
  return `${group.kind || "group"}-${i}`;
}

export function relayout() {
  tv.layout = layout(tv.lanesInfo, { groups: tv.groups, collapsed: tv.collapsed, hidden: tv.hidden });
  const lanes = [];
  const counters = [];
  for (const row of tv.layout.rows) {
    if (row.type === "lane") lanes.push(row.lane.lane_id);
    if (row.type === "counter") counters.push(row.counter.counter_id);
  }
  tv.cache.select(lanes, counters);
  clampScroll();
  renderLaneTree();
  redraw();
}

export function clampScroll() {
  tv.scrollY = Math.max(0, Math.min(tv.scrollY, tv.layout.height - tv.cssH + 40));
}

function moveGroup(key, delta, focus = `[data-move="${key}:${delta}"]`) {
  const i = tv.groups.findIndex((g) => g.key === key);
  if (!moveItem(tv.groups, i, i + delta)) return;
  relayout();
  document.querySelector(focus)?.focus();
}

function moveLane(laneId, delta) {
  const group = tv.groups.find((g) => g.lanes.some((lane) => lane.lane_id === laneId));
  if (!group) return;
  const i = group.lanes.findIndex((lane) => lane.lane_id === laneId);
  if (!moveItem(group.lanes, i, i + delta)) return;
  relayout();
  document.querySelector(`[data-lane="${laneId}"] input`)?.focus();
}

export function toggleGroup(key) {
  if (tv.collapsed.has(key)) tv.collapsed.delete(key);
  else tv.collapsed.add(key);
  relayout();
}

function altArrows(move) {
  return (e) => {
    if (!e.altKey || (e.key !== "ArrowUp" && e.key !== "ArrowDown")) return;
    e.preventDefault();
    e.stopPropagation();
    move(e.key === "ArrowUp" ? -1 : 1);
  };
}

export function renderLaneTree() {
  const tree = tv.dom.laneTree;
  if (!tree) return;
  fill(
    tree,
    el(
      "ul",
      { class: "lane-tree", "aria-describedby": "lane-tree-help" },
      tv.groups.map((g, i) =>
        el(
          "li",
          { "data-group": g.key, ...dragHandlers({ group: g.key }) },
          el(
            "div",
            { class: "lane-group" },
            el("button", { type: "button", class: "ghost", "aria-expanded": String(!tv.collapsed.has(g.key)), "aria-keyshortcuts": "Alt+ArrowUp Alt+ArrowDown", "data-toggle": g.key, onclick: () => toggleGroup(g.key), onkeydown: altArrows((d) => moveGroup(g.key, d, `[data-toggle="${g.key}"]`)) }, `${tv.collapsed.has(g.key) ? "▸" : "▾"} ${g.name}`),
            el("button", { type: "button", class: "ghost", "aria-label": `move ${g.name} up`, disabled: i === 0, "data-move": `${g.key}:-1`, onclick: () => moveGroup(g.key, -1) }, "↑"),
            el("button", { type: "button", class: "ghost", "aria-label": `move ${g.name} down`, disabled: i === tv.groups.length - 1, "data-move": `${g.key}:1`, onclick: () => moveGroup(g.key, 1) }, "↓"),
          ),
          tv.collapsed.has(g.key)
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
                        checked: !tv.hidden.has(lane.lane_id),
                        "aria-keyshortcuts": "Alt+ArrowUp Alt+ArrowDown",
                        onkeydown: altArrows((d) => moveLane(lane.lane_id, d)),
                        onchange: (e) => {
                          if (e.target.checked) tv.hidden.delete(lane.lane_id);
                          else tv.hidden.add(lane.lane_id);
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
