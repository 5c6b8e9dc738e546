// Window answers of the timeline (`timeline/window`, the binary `PHW1` format of docs/app-api.md):
// decoding into typed-array views (no copy), and a small cache that always has something to
// draw at once and asks the app for a better window in the background.
import { apiBinary } from "../common.js";

const TYPES = { f32: Float32Array, u32: Uint32Array, u16: Uint16Array, u8: Uint8Array };

/** Decode one answer: `{header, cols, lanes: Map(lane_id -> {ev: [from, to], bl: [from, to]}), counters}`. */
export function decodeWindow(buffer) {
  const bytes = new Uint8Array(buffer, 0, 4);
  const magic = String.fromCharCode(...bytes);
  if (magic !== "PHW1") throw new Error(`not a timeline window (magic ${magic})`);
  const headerLength = new DataView(buffer).getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 16, headerLength)));
  const bodyStart = 16 + headerLength;
  const cols = {};
  for (const [name, col] of Object.entries(header.columns)) {
    cols[name] = new TYPES[col.type](buffer, bodyStart + col.offset, col.length);
  }
  const lanes = new Map();
  let ev = 0;
  let bl = 0;
  for (const lane of header.lanes) {
    lanes.set(lane.lane_id, { ev: [ev, ev + lane.events], bl: [bl, bl + lane.blocks], info: lane });
    ev += lane.events;
    bl += lane.blocks;
  }
  const counters = new Map();
  let ct = 0;
  for (const counter of header.counters) {
    counters.set(counter.counter_id, [ct, ct + counter.runs]);
    ct += counter.runs;
  }
  const names = new Map(Object.entries(header.names || {}).map(([id, name]) => [Number(id), name]));
  return { header, cols, lanes, counters, names, t0: header.t0, t1: header.t1, nsPerPx: header.ns_per_px, bytes: buffer.byteLength };
}

/**
 * Keeps the last few windows and fetches new ones for the view. `best(start, end, nsPerPx)`
 * returns the cached window that covers the view at the finest resolution (drawn at once);
 * `want(...)` asks for a fresh one when the cache is too coarse or does not cover the view,
 * one request at a time (a newer view replaces a queued one) and calls `onData` when it lands.
 */
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

  /** Lanes and counters to fetch (comma lists); a change forgets the cache (but the overview). */
  select(lanes, counters) {
    const l = lanes.join(",");
    const c = counters.join(",");
    if (l !== this.lanes || c !== this.counters) {
      this.lanes = l;
      this.counters = c;
      this.windows = this.windows.filter((w) => w.everyLane);
    }
  }

  /** Keep the overview (the whole trace, every lane and counter): drawn at once under any view
   * until a finer answer lands, and kept whatever the lanes shown. */
  seed(w) {
    w.everyLane = true;
    this.bytes += w.bytes;
    this.windows.unshift(w);
  }

  covers(w, start, end, nsPerPx) {
    const a = Math.max(start, this.tMin);
    const b = Math.min(end, this.tMax);
    return w.t0 <= a && w.t1 >= b && w.nsPerPx <= nsPerPx * 1.5;
  }

  best(start, end, nsPerPx) {
    let found = null;
    for (const w of this.windows) {
      const overlaps = w.t0 < end && w.t1 > start;
      if (!overlaps) continue;
      if (this.covers(w, start, end, nsPerPx)) {
        if (!found || !this.covers(found, start, end, nsPerPx) || w.nsPerPx > found.nsPerPx) found = w;
      } else if (!found) found = w;
    }
    return found;
  }

  /** Make sure a window fit for [start, end] at `px` columns is cached or on its way. */
  want(start, end, px) {
    const nsPerPx = (end - start) / px;
    if (this.windows.some((w) => this.covers(w, start, end, nsPerPx) && w.nsPerPx >= nsPerPx / 4)) return;
    // Half a view to each side, so panning draws from the cache while the next answer comes
    // (twice the columns: still under 256 KiB a step at 2000 px).
    const span = end - start;
    const request = { start: Math.floor(start - span / 2), end: Math.ceil(end + span / 2), px: Math.min(16384, Math.round(px * 2)) };
    if (this.inFlight) {
      this.queued = request;
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
      if (this.windows.length > 6 && dropped >= 0) this.windows.splice(dropped, 1);
      this.onData(w);
    } catch (error) {
      this.onError(error);
    } finally {
      this.inFlight = null;
      if (this.queued) {
        const next = this.queued;
        this.queued = null;
        this.fetch(next);
      }
    }
  }
}
