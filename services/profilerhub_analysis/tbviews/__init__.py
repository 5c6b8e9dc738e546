"""PyTorch's TensorBoard profiler plugin's views (Overview, Operator, Kernel, Memory), by its own rules.

The plugin (kineto ``tb_plugin``, PyPI ``torch-tb-profiler``) is gone upstream; these are its tables,
computed the way its loader and view generators compute them (with the upstream fixes that never
shipped, and its quirks as ``../shared/oracle/README.md`` lists them), from a trace's bytes:

    parse   the plugin's typed events (exact categories, External ids, shapes, memory records)
    tree    per-thread call trees, runtimes on operators, GPU ops on runtimes
    steps   the steps moved to the GPU, and the window W
    views   the seven tables
    modules the module view (time per nn.Module)
    calls   every operator call, for the Operators view over a time range

``tb_views(data)`` returns them as one dict, the keys ``profilerhub analyze --format json`` prints.
"""

from __future__ import annotations

from typing import Any

from profilerhub_analysis.tbviews import memory, views
from profilerhub_analysis.tbviews.calls import operator_calls
from profilerhub_analysis.tbviews.modules import modules
from profilerhub_analysis.tbviews.parse import TbTrace, parse
from profilerhub_analysis.tbviews.steps import find_steps
from profilerhub_analysis.tbviews.tree import Forest, build

#: Said of a trace whose launches cannot be tied to their operators (the oracle's quirk T4).
OWN_ID_NOTE = (
    "Every launch in this trace carries its own correlation id as its External id (Kineto's 2023 "
    "exports), so launches reach operators only where the numbers happen to match: operators' "
    "device times and kernels by operator are not reliable here."
)
#: Points of kernel time by which the current tensor-core names must pass the plugin's to be noted.
TC_NOTE_POINTS = 0.5

SECTIONS = ("tb_overview", "tb_gpu_summary", "tb_operators", "tb_operators_by_shape", "tb_kernels",
            "tb_kernels_by_op", "tb_memory")  # fmt: skip


def tb_views(data: bytes | bytearray | TbTrace) -> dict[str, Any]:
    """The views of one (decompressed) Kineto trace document, or of its ``TbTrace`` as
    ``parse_chunks`` reads a file (``views_and_calls``' first half)."""
    return views_and_calls(data)[0]


def views_and_calls(data: bytes | bytearray | TbTrace) -> tuple[dict[str, Any], dict[str, Any]]:
    """The seven sections of one (decompressed) Kineto trace document, and every operator call
    with its figures (``calls.operator_calls``: the Operators view over any time range).

    ``tb_distributed`` is the plugin's distributed view of this worker (``views.distributed``).
    ``tb_modules`` is the module view (``modules.py``), ``None`` for a trace recorded without
    ``with_stack`` and ``with_modules``.
    ``tb_facts`` holds what the plugin's recommendations read beyond the tables (``views.facts``).
    ``tb_notes`` says what a reader should know (launches that cannot be tied to operators; tensor
    cores the plugin's kernel names miss).
    ``tb_overview`` is ``None`` where the plugin's window is undefined (no step, operator or python
    event: it would divide by a negative span), and ``tb_gpu_summary`` is then empty.
    """
    trace = data if isinstance(data, TbTrace) else parse(data)
    forest = build(trace)
    steps = find_steps(trace, forest)
    calls = operator_calls(forest)
    ops, ops_by_shape = views.operators(forest, calls)
    kernels, kernels_by_op = views.kernels(forest)
    roles = views.role_ranges(trace, forest)
    curve = memory.memory_curve(trace)
    facts = views.facts(trace, forest, curve)
    attached = memory.attach(trace, forest)
    views_ = {
        "tb_overview": views.overview(roles, steps) if steps is not None else None,
        "tb_gpu_summary": views.gpu_summary(trace, forest, steps),
        "tb_operators": ops,
        "tb_operators_by_shape": ops_by_shape,
        "tb_kernels": kernels,
        "tb_kernels_by_op": kernels_by_op,
        "tb_memory": memory.memory(trace, forest, attached),
        "tb_memory_events": memory.memory_events(trace, forest, attached),
        "tb_memory_curve": curve,
        "tb_modules": modules(trace, forest),
        "tb_distributed": views.distributed(trace, forest, roles, steps) if steps is not None else None,
        "tb_notes": _notes(trace, forest) + _tensor_core_notes(facts),
        "tb_facts": facts,
    }
    return views_, calls


def _tensor_core_notes(facts: dict[str, Any]) -> list[str]:
    """A note where the plugin's tensor-core names miss kernels that used them (``tensor_cores``)."""
    plugin, current = facts.get("tc_used_pct"), facts.get("tc_used_current_pct")
    if plugin is None or current is None or current - plugin < TC_NOTE_POINTS:
        return []
    return [
        f"Tensor cores: {current:.1f} % of the kernel time ran in tensor-core kernels by current "
        f"kernel names (cuBLAS nvjet, wgmma, CUTLASS tensorop, flash attention), {plugin:.1f} % by "
        "the plugin's names, which its Tensor Cores figures use"
    ]


def _notes(trace: TbTrace, forest: Forest) -> list[str]:
    """What a reader of these views should know about this trace."""
    rt = forest.rt_event
    if not len(rt):
        return []
    ids = trace.ids
    none = ids.index(None) if None in ids else -1
    ext, corr = trace.ext[rt], trace.corr[rt]
    if bool(((ext != none) & (ext == corr)).all()):
        return [OWN_ID_NOTE]
    return []


__all__ = ["OWN_ID_NOTE", "SECTIONS", "tb_views", "views_and_calls"]
