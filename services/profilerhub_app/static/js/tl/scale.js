// The one time-scale object of the timeline: maps trace time (ns relative to the trace origin)
// to CSS pixels of the track area and back. Every drawing and every input goes through it.

export class TimeScale {
  /** `tMin`..`tMax`: the trace's extent; the view starts fitted to it. */
  constructor(tMin, tMax) {
    this.tMin = tMin;
    this.tMax = Math.max(tMax, tMin + 1);
    this.start = this.tMin;
    this.end = this.tMax;
    this.left = 0; // x of the track area's left edge (CSS px)
    this.width = 1; // track area width (CSS px)
  }

  get span() {
    return this.end - this.start;
  }

  /** ns per CSS pixel at the current zoom. */
  get nsPerPx() {
    return this.span / this.width;
  }

  x(t) {
    return this.left + ((t - this.start) / this.span) * this.width;
  }

  t(x) {
    return this.start + ((x - this.left) / this.width) * this.span;
  }

  /** Show [start, end], kept inside the trace with at least 1 µs·px⁻¹/1000 (100 ns) visible. */
  set(start, end) {
    const full = this.tMax - this.tMin;
    let span = Math.min(Math.max(end - start, 100), full * 1.2);
    let s = start;
    if (end - start !== span) s = (start + end) / 2 - span / 2;
    const margin = full * 0.1;
    s = Math.max(this.tMin - margin, Math.min(s, this.tMax + margin - span));
    this.start = s;
    this.end = s + span;
    return this;
  }

  /** Zoom by `factor` (< 1 zooms in) keeping the time under CSS x `anchor` in place. */
  zoom(factor, anchor = this.left + this.width / 2) {
    const t = this.t(anchor);
    const ratio = (anchor - this.left) / this.width;
    const span = this.span * factor;
    return this.set(t - ratio * span, t - ratio * span + span);
  }

  /** Move the view by `dx` CSS pixels (positive = later). */
  pan(dx) {
    const dt = dx * this.nsPerPx;
    return this.set(this.start + dt, this.end + dt);
  }

  fit() {
    return this.set(this.tMin, this.tMax);
  }
}
