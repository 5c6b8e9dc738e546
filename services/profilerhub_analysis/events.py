"""The typed shapes of trace events: one msgspec struct per Chrome-trace phase.

``ph`` is the tag, so the decoder builds each event with only the fields its phase needs: complete
events (``X``) get category, name, thread, times and the launch-related ``args``; flow, async and
other phases the store ignores decode to empty structs (their strings are skipped, not created).
Every struct is ``gc=False``: millions of them never burden the garbage collector.
"""

from __future__ import annotations

import math
from typing import Any, Union

import msgspec

NAN = math.nan


class XArgs(msgspec.Struct, frozen=True, gc=False):
    """The ``args`` of a complete event that the store keeps.

    The numeric fields also take strings (a real MI300X trace writes ``"bytes"`` as one): a
    number written as text is read as that number when the columns are built, other text costs
    that field (-1), never the event nor the document's typed decode (``build._numbers``).
    """

    device: int = -1
    stream: int | str | None = -1
    correlation: int | str = -1
    bytes: int | str = -1
    #: Kineto's own per-op figure on memcpy/memset ops.
    bandwidth: float | str = msgspec.field(name="memory bandwidth (GB/s)", default=-1.0)
    #: CUPTI launch figures on kernels (what TensorBoard's SM efficiency and occupancy use).
    blocks_per_sm: float | str = msgspec.field(name="blocks per SM", default=-1.0)
    occupancy: float | str = msgspec.field(name="est. achieved occupancy %", default=-1.0)


class TfArgs(XArgs, frozen=True, gc=False):
    """``XArgs`` plus TensorFlow's spellings (its exporter writes most values as strings): the
    CUPTI correlation id, ``"regs:32 ... occ_pct:50"`` on kernels, ``"... size:1024 ..."`` on
    copies, ``"... num_bytes:64 ..."`` on sets, and the step of a step marker
    (``tf.profiler.experimental.Trace("train", step_num=3)``). A type of its own, so that Kineto
    events do not carry (and decode) these fields."""

    correlation_id: int | str | None = None
    step_num: int | str | None = None
    kernel_details: str | None = None
    memcpy_details: str | None = None
    memset_details: str | None = None


class MetaArgs(msgspec.Struct, frozen=True, gc=False):
    name: str | None = None
    sort_index: int | None = None
    labels: str | None = None


class MemoryArgs(msgspec.Struct, frozen=True, gc=False):
    """PyTorch's ``[memory]`` instant events (``profile_memory=True``)."""

    total_allocated: int | float | None = msgspec.field(name="Total Allocated", default=None)
    total_reserved: int | float | None = msgspec.field(name="Total Reserved", default=None)
    device_id: int = msgspec.field(name="Device Id", default=-1)
    device_type: int = msgspec.field(name="Device Type", default=-1)


class TraceEvent(msgspec.Struct, tag_field="ph", gc=False):
    """Base of every event type; ``ph`` selects the subclass."""


class Complete(TraceEvent, tag="X", gc=False):
    cat: str = ""
    name: str = ""
    pid: int | str = -1
    tid: int | str = -1
    ts: int | float = NAN
    dur: int | float = NAN
    args: XArgs = XArgs()


class TfComplete(Complete, tag="X", gc=False):
    """A complete event of a TensorFlow trace (decoded with ``TF_EVENT_TYPES``)."""

    args: TfArgs = TfArgs()


class Metadata(TraceEvent, tag="M", gc=False):
    name: str = ""
    pid: int | str = -1
    tid: int | str = -1
    args: MetaArgs = MetaArgs()


class Instant(TraceEvent, tag="i", gc=False):
    name: str = ""
    ts: int | float = NAN
    args: MemoryArgs = MemoryArgs()


class GlobalInstant(Instant, tag="I", gc=False):
    pass


class Counter(TraceEvent, tag="C", gc=False):
    """A counter sample: each ``args`` key is one series."""

    name: str = ""
    ts: int | float = NAN
    args: dict[str, Any] | None = None


class UnknownPhase(TraceEvent, tag="?", gc=False):
    """What the lenient reader keeps for an event of a phase it does not know (or none)."""


#: Phases of the Trace Event Format that the store does not use: decoded without fields.
IGNORED_PHASES = "BEbnestfPONDRSTpF()"
_IGNORED: tuple[type[TraceEvent], ...] = tuple(
    msgspec.defstruct(f"Phase_{i}", [], bases=(TraceEvent,), tag=ph)  # type: ignore[misc]
    for i, ph in enumerate(IGNORED_PHASES)
)

EVENT_TYPES: tuple[type[TraceEvent], ...] = (Complete, Metadata, Instant, GlobalInstant, Counter, *_IGNORED)
AnyEvent = Union[EVENT_TYPES]  # type: ignore[valid-type]  # noqa: UP007 - built from a tuple
#: The same with TensorFlow's complete events.
TF_EVENT_TYPES: tuple[type[TraceEvent], ...] = (TfComplete, *EVENT_TYPES[1:])
TfAnyEvent = Union[TF_EVENT_TYPES]  # type: ignore[valid-type]  # noqa: UP007 - built from a tuple
#: The ``ph`` of each event type ("?" for UnknownPhase).
_ALL_TYPES: tuple[type[TraceEvent], ...] = (*EVENT_TYPES, TfComplete, UnknownPhase)
PHASE_OF: dict[type, str] = {cls: str(cls.__struct_config__.tag) for cls in _ALL_TYPES}
KNOWN_PHASES = frozenset(PHASE_OF.values()) - {"?"}


__all__ = [
    "EVENT_TYPES",
    "IGNORED_PHASES",
    "KNOWN_PHASES",
    "PHASE_OF",
    "TF_EVENT_TYPES",
    "AnyEvent",
    "Complete",
    "Counter",
    "GlobalInstant",
    "Instant",
    "MemoryArgs",
    "MetaArgs",
    "Metadata",
    "TfAnyEvent",
    "TfArgs",
    "TfComplete",
    "TraceEvent",
    "UnknownPhase",
    "XArgs",
]
