// The decoder of the timeline's binary window answers, `PHW1` (docs/app-api.md; the encoder is
// profilerhub_analysis/timeline/binary.py): typed-array views over the answer, no copy. No DOM and
// no imports, so node runs it too (tests/app/test_app_phw1_decoder.py, against the Python encoder).

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
