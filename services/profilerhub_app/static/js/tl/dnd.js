// Drag and drop in the Lanes tree: what is dragged is `tv.dragged` ({group} or {lane}); a drop
// lands before the item under the pointer (after it in its lower half); lanes stay in their group.
import { relayout, renderLaneTree } from "./lanes.js";
import { tv } from "./state.js";

/** Move `list[from]` to `to` in place; false when either is outside the list or they are equal. */
export function moveItem(list, from, to) {
  if (from < 0 || to < 0 || from >= list.length || to >= list.length || from === to) return false;
  const [item] = list.splice(from, 1);
  list.splice(to, 0, item);
  return true;
}

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
  const from = tv.dragged;
  tv.dragged = null;
  if (!from) return;
  if (from.group !== undefined && at.group !== undefined) {
    const i = tv.groups.findIndex((g) => g.key === from.group);
    let j = tv.groups.findIndex((g) => g.key === at.group) + (at.after ? 1 : 0);
    if (j > i) j -= 1;
    moveItem(tv.groups, i, j);
  } else if (from.lane !== undefined && at.lane !== undefined) {
    const group = tv.groups.find((g) => g.lanes.some((lane) => lane.lane_id === from.lane));
    if (!group || !group.lanes.some((lane) => lane.lane_id === at.lane)) return renderLaneTree(); // lanes stay in their group
    const i = group.lanes.findIndex((lane) => lane.lane_id === from.lane);
    let j = group.lanes.findIndex((lane) => lane.lane_id === at.lane) + (at.after ? 1 : 0);
    if (j > i) j -= 1;
    moveItem(group.lanes, i, j);
  }
  relayout();
}

/** The attributes that make a tree item (`{group: key}` or `{lane: id}`) draggable and a drop target. */
export function dragHandlers(item) {
  const sameKind = () => tv.dragged && (tv.dragged.group !== undefined) === (item.group !== undefined);
  return {
    draggable: "true",
    ondragstart: (e) => {
      e.stopPropagation();
      tv.dragged = item;
      e.dataTransfer.effectAllowed = "move";
      e.dataTransfer.setData("text/plain", JSON.stringify(item));
    },
    ondragover: (e) => {
      if (sameKind()) {
        e.stopPropagation();
        dropTarget(e, item);
      }
    },
    ondragleave: (e) => e.currentTarget.classList.remove("drop-before", "drop-after"),
    ondrop: (e) => {
      if (sameKind()) onDrop(e, item);
    },
    ondragend: () => {
      tv.dragged = null;
      tv.dom.laneTree.querySelectorAll(".drop-before, .drop-after").forEach((n) => n.classList.remove("drop-before", "drop-after"));
    },
  };
}
