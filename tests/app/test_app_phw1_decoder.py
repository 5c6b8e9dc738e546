"""The timeline's ``PHW1`` decoder (``static/js/tl/phw1.js``, the browser's) reads exactly what the
Python encoder (``profilerhub_analysis.timeline.binary``) writes, on the edge cases: an empty
window, one event, the most lanes a window request may name, names outside ASCII.

Run under node (no browser, no build step: the module is a native ES module with no imports);
skipped, saying so, where node is not installed.
"""

from __future__ import annotations

import inspect
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from profilerhub_analysis.timeline.binary import decode_window, encode_window
from profilerhub_analysis.timeline.counters import CounterTrack
from profilerhub_analysis.timeline.window import Blocks, Events, LaneWindow, Window
from profilerhub_app.http import id_list

DECODER = Path(__file__).resolve().parents[2] / "services/profilerhub_app/static/js/tl/phw1.js"
MAX_LANES = inspect.signature(id_list).parameters["limit"].default
NODE = shutil.which("node")

# Decode each file named on the command line; print what the page reads of it, as JSON.
SCRIPT = """
import { readFileSync } from "node:fs";
const { decodeWindow } = await import(process.argv[1]);
const out = [];
for (const file of process.argv.slice(2)) {
  const data = readFileSync(file);
  const w = decodeWindow(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength));
  out.push({
    t0: w.t0, t1: w.t1, nsPerPx: w.nsPerPx, bytes: w.bytes,
    cols: Object.fromEntries(
      Object.entries(w.cols).map(([k, v]) => [k, [v.constructor.name, Array.from(v)]]),
    ),
    lanes: [...w.lanes].map(([id, lane]) => [id, lane.ev, lane.bl]),
    counters: [...w.counters],
    names: [...w.names],
  });
}
console.log(JSON.stringify(out));
"""


def _ints(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _events(n: int, *, name: int = 0, at: int = 0) -> Events:
    return Events(
        start=at + np.arange(n, dtype=np.int64) * 10, dur=np.full(n, 7, dtype=np.int64),
        depth=np.arange(n, dtype=np.int64) % 3, name_id=np.full(n, name, dtype=np.int64),
        kind=np.full(n, -1, dtype=np.int64), event_id=np.arange(n, dtype=np.int64) + 70_000,
    )  # fmt: skip


def _window(lanes: list[LaneWindow], names: list[str], counters: list[CounterTrack] = ()) -> Window:  # type: ignore[assignment]
    return Window(
        t0_ns=1_000_000, t1_ns=2_000_000, width_px=800, min_px=0.5, lanes=lanes, counters=list(counters),
        names=names, counter_names=None, origin_ns=999_000,
    )  # fmt: skip


def _lane(lane_id: int, events: Events, blocks: Blocks | None = None) -> LaneWindow:
    return LaneWindow(lane_id, events, blocks or Blocks.empty(), depth_shown=3, truncated=False)


CASES: dict[str, Window] = {
    "empty": _window([], []),
    "one event": _window([_lane(5, _events(1, at=1_000_250))], ["aten::mm"]),
    "most lanes": _window(
        [_lane(i, _events(i % 2, name=i % 300, at=1_000_000)) for i in range(MAX_LANES)],
        [f"op{i}" for i in range(300)],
    ),
    "unicode names": _window(
        [
            _lane(
                0,
                _events(2, name=1, at=1_000_000),
                Blocks(
                    start=_ints(1_000_100),
                    end=_ints(1_000_900),
                    depth=_ints(1),
                    count=_ints(40),
                    busy_ns=_ints(650),
                    name_id=_ints(2),
                    kind=_ints(3),
                    event_id=_ints(90_000),
                ),
            ),
        ],
        ["unused", "σ→ß·ümlaut 🔥 ‹naïve›", '名前/カーネル "quoted" \\ back'],
        [
            CounterTrack(
                7,
                np.array([0, 3], np.int32),
                np.array([3, 1], np.int32),
                np.array([0.5, 1.0]),
                np.array([2.5, 1.0]),
                np.array([1.25, 1.0]),
            )
        ],
    ),  # fmt: skip
}


@pytest.fixture(scope="module")
def decoded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bytes, dict[str, Any]]]:
    if NODE is None:
        pytest.skip("node is not installed: the PHW1 decoder is checked by the timeline's browser tests only")
    folder = tmp_path_factory.mktemp("phw1")
    answers = {name: encode_window(window) for name, window in CASES.items()}
    files = []
    for i, data in enumerate(answers.values()):
        (folder / f"{i}.phw1").write_bytes(data)
        files.append(str(folder / f"{i}.phw1"))
    done = subprocess.run(
        [NODE, "--input-type=module", "-e", SCRIPT, DECODER.as_uri(), *files],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dict(zip(answers, zip(answers.values(), json.loads(done.stdout), strict=True), strict=True))


@pytest.mark.parametrize("case", CASES)
def test_the_browsers_decoder_reads_what_the_encoder_wrote(decoded: dict[str, Any], case: str) -> None:
    data, js = decoded[case]
    header, cols = decode_window(data)  # the Python reader, the format's other half
    assert js["bytes"] == len(data)
    assert (js["t0"], js["t1"], js["nsPerPx"]) == (header["t0"], header["t1"], header["ns_per_px"])
    kinds = {"f32": "Float32Array", "u32": "Uint32Array", "u16": "Uint16Array", "u8": "Uint8Array"}
    assert set(js["cols"]) == set(cols)
    for name, values in cols.items():
        kind, got = js["cols"][name]
        assert kind == kinds[header["columns"][name]["type"]], name
        assert got == values.tolist(), name  # float32 values are exact in a JS number
    ev = bl = 0
    expected_lanes = []
    for lane in header["lanes"]:
        expected_lanes.append([lane["lane_id"], [ev, ev + lane["events"]], [bl, bl + lane["blocks"]]])
        ev, bl = ev + lane["events"], bl + lane["blocks"]
    assert js["lanes"] == expected_lanes
    assert [[int(k), v] for k, v in header["names"].items()] == js["names"]


def test_the_edge_cases_carry_what_they_are_about(decoded: dict[str, Any]) -> None:
    empty = decoded["empty"][1]
    assert empty["lanes"] == [] and empty["names"] == [] and all(v == [] for _, v in empty["cols"].values())
    one = decoded["one event"][1]
    assert one["cols"]["ev_start"][1] == [250.0] and one["cols"]["ev_id"][1] == [70_000]
    assert one["names"] == [[0, "aten::mm"]]
    most = decoded["most lanes"][1]
    assert len(most["lanes"]) == MAX_LANES == 4096
    assert most["lanes"][-1] == [MAX_LANES - 1, [MAX_LANES // 2 - 1, MAX_LANES // 2], [0, 0]]
    assert most["cols"]["ev_name"][0] == "Uint16Array"  # 300 names: the narrowest type that holds them
    uni = decoded["unicode names"][1]
    assert dict(uni["names"]) == {1: "σ→ß·ümlaut 🔥 ‹naïve›", 2: '名前/カーネル "quoted" \\ back'}
    assert uni["counters"] == [[7, [0, 2]]] and uni["cols"]["ct_mean"][1] == [1.25, 1.0]
    assert uni["cols"]["bl_kind"][1] == [3] and uni["cols"]["ev_kind"][1] == [255, 255]  # -1: unknown
