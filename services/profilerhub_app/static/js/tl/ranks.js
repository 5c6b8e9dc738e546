// The timeline of one rank of a job of several: a rank picker in the toolbar that opens another
// rank's timeline over the same wall-clock time (the URL's t0us/t1us are wall-clock µs: trace
// time plus the trace's base, as the lanes' `origin_ns`), and a link to the dashboard's all-ranks
// overview.
import { api, base, el } from "../common.js";
import { tv } from "./state.js";

/** ns from the origin -> wall-clock µs as text (BigInt: the origin is ~1.8e18 ns, past 2^53). */
function wallUs(rel) {
  const ns = BigInt(tv.lanesInfo.origin_ns) + BigInt(Math.round(rel));
  const sign = ns < 0n ? "-" : "";
  const abs = ns < 0n ? -ns : ns;
  return `${sign}${abs / 1000n}.${String(abs % 1000n).padStart(3, "0")}`;
}

/** Put the picker before `anchor` (a toolbar element) when the job has several ranks. */
export async function installRankPicker(anchor) {
  const data = await api(`${tv.jobPath}/ranks`);
  const rows = data.ranks || [];
  if (rows.length < 2) return;
  const select = el(
    "select",
    { id: "tl-rank", "aria-label": "rank: open another rank's timeline over the same time" },
    rows.map((r) => el("option", { value: r.index, selected: r.index === tv.trace }, `rank ${r.rank}`)),
  );
  select.addEventListener("change", () => {
    const params = new URLSearchParams({ trace: select.value });
    if (tv.scale) {
      params.set("t0us", wallUs(tv.scale.start));
      params.set("t1us", wallUs(tv.scale.end));
    }
    location.href = `${base}${tv.jobPath}/timeline?${params}`;
  });
  const all = el("a", { href: `${base}${tv.jobPath}?trace=${tv.trace}#ranks-overview`, id: "tl-all-ranks" }, "All ranks");
  anchor.before(el("label", { class: "muted" }, "Rank ", select), " ", all, " ");
}
