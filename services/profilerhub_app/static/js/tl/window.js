// Window answers of the timeline (`timeline/window`, the binary `PHW1` format of docs/app-api.md):
// a small cache that always has something to draw at once and asks the app for a better window
// in the background. The decoding is phw1.js's.
import { apiBinary } from "../common.js";
import { decodeWindow } from "./phw1.js";

/**
 * Keeps the last few windows and fetches new ones for the view. `plan(start, end, nsPerPx)` says
 * what to draw at once: pieces `{w, t0, t1}` (a window and the time range it is drawn in), either
 * windows at the view's resolution that together cover it (a pan fetches only the newly exposed
 * range, so several pieces lie side by side) or, while those are missing, the finest coarser
 * window there is (the overview at worst) around whatever fine pieces exist. `want(...)` asks for
 * what is missing, one request at a time (a newer view replaces a queued one), and calls `onData`
 * when it lands.
 */
export const MAX_WINDOWS = 12;

export class WindowCache {
  /** `tMin`..`tMax`: the trace's extent (nothing is drawn outside it, so no window need cover more). */
  constructor(jobPath, trace, tMin, tMax, onData, onError) {
    this.jobPath = jobPath;
    this.trace = trace;
    this.tMin = tMin;
    this.tMax = tMax;
    this.onData = onData;
    this.onError = onError;
    this.windows = [];
    this.inFlight = null;
    this.queued = null;
    this.fetched = 0;
    this.bytes = 0;
    this.lanes = "";
    this.counters = "";
  }

  /** Lanes and counters to fetch. Order does not matter (answers are looked up by id), so a
   * reorder fetches nothing; a window holding every lane and counter shown stays drawable. */
  select(lanes, counters) {
    const l = [...lanes].sort((a, b) => a - b).join(",");
    const c = [...counters].sort((a, b) => a - b).join(",");
    if (l !== this.lanes || c !== this.counters) {
      this.lanes = l;
      this.counters = c;
      this.windows = this.windows.filter((w) => lanes.every((id) => w.lanes.has(id)) && counters.every((id) => w.counters.has(id)));
    }
  }

  /** Keep the overview (the whole trace, every lane and counter): drawn at once under any view
   * until a finer answer lands, and kept whatever the lanes shown. */
  seed(w) {
    w.everyLane = true;
    this.bytes += w.bytes;
    this.windows.unshift(w);
  }

  /** Fine enough for a view of `nsPerPx` (at most 1.5x coarser), and not needlessly fine (many
   * more items than the view can show), the overview excepted (4096 columns draw fast anyway). */
  fits(w, nsPerPx) {
    return w.nsPerPx <= nsPerPx * 1.5 && (w.everyLane || w.nsPerPx >= nsPerPx / 4);
  }

  /** `{pieces, complete, fine: [lo, hi] | null}`: what to draw for the view (see the class doc). */
  plan(start, end, nsPerPx) {
    const a = Math.max(start, this.tMin);
    const b = Math.max(a, Math.min(end, this.tMax));
    let single = null; // the coarsest fitting window covering the view alone: fewest items to draw
    for (const w of this.windows) {
      if (this.fits(w, nsPerPx) && w.t0 <= a && w.t1 >= b && (!single || w.nsPerPx > single.nsPerPx)) single = w;
    }
    if (single) return { pieces: [{ w: single, t0: start, t1: end }], complete: true, fine: [a, b] };
    // Fitting windows side by side: the run of them that covers the most of the view from its left.
    const fine = this.windows.filter((w) => this.fits(w, nsPerPx) && w.t0 < b && w.t1 > a).sort((x, y) => x.t0 - y.t0);
    const pieces = [];
    let lo = null;
    let hi = null;
    for (const w of fine) {
      if (hi !== null && w.t0 > hi) break; // a hole: keep the run so far
      if (hi !== null && w.t1 <= hi) continue;
      pieces.push({ w, t0: hi === null ? w.t0 : hi, t1: w.t1 });
      if (lo === null) lo = w.t0;
      hi = w.t1;
    }
    const complete = lo !== null && lo <= a && hi >= b;
    if (complete) {
      pieces[0].t0 = start;
      pieces[pieces.length - 1].t1 = end;
      return { pieces, complete, fine: [lo, hi] };
    }
    // Around the fine run, the finest coarser window overlapping the view (drawn at once).
    let coarse = null;
    for (const w of this.windows) {
      if (w.t0 >= end || w.t1 <= start || this.fits(w, nsPerPx)) continue;
      const covers = w.t0 <= a && w.t1 >= b;
      const best = coarse && coarse.t0 <= a && coarse.t1 >= b;
      if (!coarse || (covers && !best) || (covers === best && w.nsPerPx < coarse.nsPerPx)) coarse = w;
    }
    const around = [];
    if (coarse) {
      if (lo === null) around.push({ w: coarse, t0: start, t1: end });
      else {
        if (lo > start) around.push({ w: coarse, t0: start, t1: lo });
        if (hi < end) around.push({ w: coarse, t0: hi, t1: end });
      }
    }
    return { pieces: [...around, ...pieces], complete: false, fine: lo === null ? null : [lo, hi] };
  }

  /** Make sure windows fit for [start, end] at `px` columns are cached or on their way: one
   * column per view pixel, a quarter view beyond each side (so a pan draws from the cache while
   * the next answer comes); next to a fitting window, only the range it does not hold. */
  want(start, end, px) {
    const nsPerPx = (end - start) / px;
    const plan = this.plan(start, end, nsPerPx);
    if (plan.complete) return;
    const margin = (end - start) / 4;
    let from = start - margin;
    let to = end + margin;
    if (plan.fine) {
      const [lo, hi] = plan.fine;
      if (lo <= Math.max(start, this.tMin)) from = hi; // exposed on the right: fetch from where it ends
      else if (hi >= Math.min(end, this.tMax)) to = lo; // on the left
    }
    from = Math.floor(Math.max(from, this.tMin - margin));
    to = Math.ceil(Math.min(to, this.tMax + margin));
    if (to <= from) return;
    const request = { start: from, end: to, px: Math.max(1, Math.min(16384, Math.ceil((to - from) / nsPerPx))) };
    if (this.inFlight) {
      const same = this.inFlight.start === request.start && this.inFlight.end === request.end && this.inFlight.px === request.px;
      if (!same) this.queued = request;
      return;
    }
    this.fetch(request);
  }

  async fetch(request) {
    this.inFlight = request;
    const params = new URLSearchParams({ trace: String(this.trace), start: String(request.start), end: String(request.end), px: String(request.px), lanes: this.lanes, counters: this.counters });
    try {
      const buffer = await apiBinary(`${this.jobPath}/timeline/window?${params}`);
      const w = decodeWindow(buffer);
      this.fetched += 1;
      this.bytes += w.bytes;
      this.lastBytes = w.bytes;
      this.windows.push(w);
      const dropped = this.windows.findIndex((x) => !x.everyLane);
      if (this.windows.length > MAX_WINDOWS && dropped >= 0) this.windows.splice(dropped, 1);
      this.onData(w);
    } catch (error) {
      this.onError(error);
    } finally {
      this.inFlight = null;
      if (this.queued) {
        this.queued = null;
        this.onData(null); // the next frame asks for what its view still lacks
      }
    }
  }
}
