// Search: the events whose name matches, stepped through one by one (each selected and revealed),
// fetched 500 at a time as the steps reach the end of what is loaded.
import { api, count } from "../common.js";
import { select } from "./selection.js";
import { tv } from "./state.js";
import { saveUrlSoon } from "./urlstate.js";

function matching(q, after) {
  const from = after === undefined ? "" : `&after=${after}`;
  return api(`${tv.jobPath}/timeline/search?trace=${tv.trace}&q=${encodeURIComponent(q)}&limit=500${from}`);
}

export async function search(q) {
  tv.matches = [];
  tv.matchIndex = -1;
  tv.query = q;
  if (!q) {
    tv.dom.matches.textContent = "";
    saveUrlSoon();
    return;
  }
  const answer = await matching(q);
  tv.matches = answer.matches;
  tv.total = answer.total;
  tv.more = answer.more;
  if (!tv.matches.length) {
    tv.dom.matches.textContent = "no match";
    return;
  }
  await step(1);
}

export async function step(delta) {
  if (!tv.matches.length) return;
  let i = tv.matchIndex + delta;
  if (i >= tv.matches.length && tv.more) {
    const answer = await matching(tv.query, tv.matches[tv.matches.length - 1].start + 1);
    tv.matches.push(...answer.matches);
    tv.more = answer.more;
  }
  i = (i + tv.matches.length) % tv.matches.length;
  tv.matchIndex = i;
  await select(tv.matches[i].id, { reveal: true });
  tv.dom.matches.textContent = `${count(i + 1)} of ${count(tv.total)}`; // once the match is shown
}

/** The URL's search (`q`) again, at its selected match (`sel`) when it names one. */
export async function restoreSearch(q, sel) {
  tv.dom.query.value = q;
  tv.query = q;
  if (sel === undefined) return search(q);
  const answer = await matching(q);
  Object.assign(tv, { matches: answer.matches, total: answer.total, more: answer.more });
  tv.matchIndex = answer.matches.findIndex((m) => m.id === Number(sel));
  tv.dom.matches.textContent = tv.matchIndex >= 0 ? `${count(tv.matchIndex + 1)} of ${count(tv.total)}` : `${count(tv.total)} matches`;
}
