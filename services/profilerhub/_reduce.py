"""Tensor reductions on the tensor's own device: ``STATS`` and the log-magnitude histogram.

``reduce_rows(torch, tensors)`` returns one row per tensor, the ``STATS`` then the ``N_BINS``
histogram counts (``profilerhub_analysis.tensors`` defines both and is the numpy reference; the SDK
may not import it, so the edges are rebuilt here and a test checks they are the same).

The histogram reads the float32 bit pattern: bits 19-30 are the exponent and the top four
mantissa bits, so one ``bincount`` of ``(bits >> 19) & 0xfff`` sorts every value into 4096 fine
bins of its magnitude (sixteen per octave), and a fixed table folds those into the coarse bins,
whose edges (powers of two, and 0.875, 0.9375, 0.96875 for saturation) are fine-bin edges. That is
exact, and costs two integer passes instead of a binary search per element.

Three paths, the same numbers:

- on the CPU, where the SDK's C helper builds (``_native``: a C compiler on the machine), every
  float32 tensor of a call (half and bfloat16 cast) in one call that reads each value once for
  all its statistics and its histogram, and folds the bins: whole rows (``_native_parts``);
- on the CPU otherwise (and for float64 tensors), per tensor, with reductions that allocate
  nothing (``sum``, ``aminmax``, norms, ``count_nonzero``): flattening many small tensors into
  one buffer costs more there (page faults of the fresh buffer) than it saves. A tensor whose
  histogram shows NaN or Inf is reduced again with the masked path below (reading that flag is
  no device synchronisation on the CPU).
- elsewhere (CUDA), batched (``_reduce_rows``): the tensors are laid out in rows of ``ROW_LEN``
  values, in groups of at most ``GROUP_ELEMENTS``, each tensor's last row padded with NaN; every
  statistic is one of torch's own reductions along the rows, masked for NaN/Inf, and the rows'
  partials are then summed per tensor (a few rows each); the fine bins are counted by sorting
  (tensor, bin) keys and searching each bin's bounds. So a step's 200 parameters cost about thirty
  kernels, no synchronisation, and no atomic update that thousands of threads aim at one address
  (segment reductions over the values themselves, ``scatter_reduce`` and ``index_add_``: a saved
  step of 1.6M values cost 58 ms on an H200 that way).

Statistics are computed in float32 (float64 for float64 tensors); a half/bfloat16 tensor is cast
first (mixed precision). The rows stay on the device; the caller copies a step's rows once.
Only this module and ``_watch`` import torch, and only once ``ph.watch`` is called.
"""

from __future__ import annotations

import bisect
import ctypes
import math
from collections.abc import Sequence
from typing import Any

from . import _native

STATS = ("min", "max", "mean", "std", "l1", "l2", "nan", "inf", "zero_frac", "numel")
HIST_EDGES: list[float] = sorted({2.0**k for k in range(-34, 21)} | {0.875, 0.9375, 0.96875})
N_BINS = len(HIST_EDGES) + 2
ROW = len(STATS) + N_BINS
FINE = 4096
GROUP_ELEMENTS = 1 << 26
"""At most this many elements are flattened at once on a GPU (256 MiB of float32): the bound on
the transient device memory a reduction takes."""


def _fine_to_coarse() -> list[int]:
    """Coarse bin of each fine bin (``N_BINS`` = dropped: NaN/Inf), from the fine bin's low end."""
    out = []
    for f in range(FINE):
        exp, top = f >> 4, f & 15
        if exp == 0xFF:
            out.append(N_BINS)  # NaN and Inf are counted apart, not in the histogram
        elif exp == 0:
            out.append(1)  # zero and subnormals: below the lowest edge (zeros moved to bin 0 later)
        else:
            low = 2.0 ** (exp - 127) * (1 + top / 16)
            out.append(bisect.bisect_right(HIST_EDGES, low) + 1)
    return out


LUT = _fine_to_coarse()
_cache: dict[tuple[str, str], Any] = {}


def _lut(torch: Any, device: Any) -> Any:
    key = ("lut", str(device))
    if key not in _cache:
        _cache[key] = _to_device(torch, LUT, device)
    return _cache[key]


def reduce_rows(torch: Any, tensors: Sequence[Any], *, batched: bool | None = None) -> Any:
    """``(len(tensors), ROW)`` float64 rows (float32 on MPS) on the tensors' (one) device.

    ``batched`` picks the path (default: per tensor on the CPU, batched elsewhere)."""
    return fold(torch, partial(torch, tensors, batched=batched))


def partial(torch: Any, tensors: Sequence[Any], *, batched: bool | None = None) -> list[Any]:
    """Each tensor's reduction, not yet folded: ``fold`` turns any number of these (of one
    device, from several calls) into rows at once, so a step's many small calls (one per layer's
    output) share one fold."""
    device = tensors[0].device
    if batched is None:
        batched = device.type != "cpu"
    with torch.no_grad():
        if not batched:
            return _per_tensor(torch, tensors)
        reduce_group = _reduce_group if device.type == "cpu" else _reduce_rows
        out: list[Any] = []
        group: list[Any] = []
        size = 0
        for t in tensors:
            if group and size + t.numel() > GROUP_ELEMENTS:
                out.extend(reduce_group(torch, group))
                group, size = [], 0
            group.append(t)
            size += t.numel()
        out.extend(reduce_group(torch, group))
        return out


def _per_tensor(torch: Any, tensors: Sequence[Any]) -> list[Any]:
    """The CPU path: every float32 (or half, cast) tensor in one native call (``_native``) when
    it is built; else, and for float64 tensors, each large tensor alone and the small ones
    (biases, norms) together through the batched path, whose twenty-odd operations then cost
    less than a dozen per small tensor."""
    out: list[Any] = [None] * len(tensors)
    native = _native.lib()
    if native is not None:
        _native_parts(torch, native, tensors, out)
        if all(o is not None for o in out):
            return out
    small = [i for i, t in enumerate(tensors) if out[i] is None and t.numel() <= SMALL_ELEMENTS]
    if len(small) > 1:
        for i, row in zip(small, _reduce_group(torch, [tensors[i] for i in small]), strict=True):
            out[i] = row
    large = [t.numel() for i, t in enumerate(tensors) if out[i] is None]
    # One |x| buffer for the call, sized for its largest tensor: a fresh one per tensor costs
    # page faults that made a saved step's reductions ~25 % slower (measured in context).
    scratch = torch.empty(max(large), dtype=torch.float32) if large else None
    for i, t in enumerate(tensors):
        if out[i] is None:
            out[i] = _reduce_one(torch, t, scratch)
    return out


SMALL_ELEMENTS = 4096
"""On the CPU, tensors of at most this many elements are reduced together (``_per_tensor``)."""


def _native_parts(torch: Any, native: Any, tensors: Sequence[Any], out: list[Any]) -> None:
    """``out[i]`` = the row of each tensor the C reduction takes (float32, contiguous, not empty;
    half and bfloat16 cast first): all of them in one call, the GIL released."""
    flat: list[tuple[int, Any]] = []
    for i, t in enumerate(tensors):
        x = t.detach().reshape(-1)
        if x.dtype == torch.float64 or x.numel() == 0:
            continue
        if x.dtype != torch.float32:
            x = x.to(torch.float32)
        elif not x.is_contiguous():  # a strided 1-d view: reshape kept it
            x = x.contiguous()
        flat.append((i, x))
    k = len(flat)
    if not k:
        return
    rows = torch.empty((k, ROW), dtype=torch.float64)
    ptrs = (ctypes.c_void_p * k)(*[x.data_ptr() for _, x in flat])
    lens = (ctypes.c_int64 * k)(*[x.numel() for _, x in flat])
    native.ph_reduce_f32(k, ptrs, lens, _LUT32, N_BINS, rows.data_ptr())
    for j, (i, _) in enumerate(flat):
        out[i] = rows[j]


_LUT32 = (ctypes.c_int32 * FINE)(*LUT)


def fold(torch: Any, parts: Sequence[Any]) -> Any:
    """``(len(parts), ROW)`` rows of ``partial``'s results (of one device), in order."""
    with torch.no_grad():
        pending = [i for i, d in enumerate(parts) if isinstance(d, tuple)]
        if len(pending) == len(parts):  # the CPU's common case: one fold for all
            return _fold_cpu(torch, parts)
        rows = list(parts)
        if pending:
            folded = _fold_cpu(torch, [parts[i] for i in pending])
            for j, i in enumerate(pending):
                rows[i] = folded[j]
        return torch.stack(rows)


def _fold_cpu(torch: Any, done: Sequence[Any]) -> Any:
    stats = torch.tensor([d[0] for d in done], dtype=torch.float64)
    fine = torch.stack([d[1] for d in done])
    counts = _coarse(torch, fine, stats[:, ZEROS]).to(torch.float64)
    stats[:, ZEROS] /= stats[:, NUMEL]
    return torch.cat([stats, counts], dim=1)


ZEROS = STATS.index("zero_frac")  # holds the zero *count* until the fold divides it
NUMEL = STATS.index("numel")


def _as_float(torch: Any, t: Any) -> tuple[Any, Any]:
    """(values for the statistics, float32 values for the histogram), flat."""
    x = t.detach().reshape(-1)
    if x.dtype == torch.float64:
        return x, x.clamp(-3.0e38, 3.0e38).to(torch.float32)
    if x.dtype != torch.float32:
        x = x.to(torch.float32)
    return x, x


def _fine_counts(torch: Any, x32: Any, seg: Any = None, k: int = 1) -> Any:
    idx = (x32.view(torch.int32) >> 19) & 0xFFF
    if seg is not None:
        idx = idx + seg * FINE
    return torch.bincount(idx, minlength=k * FINE).reshape(k, FINE)


def _coarse(torch: Any, fine: Any, zeros: Any) -> Any:
    """``(k, N_BINS)`` counts from ``(k, FINE)`` fine counts, exact zeros in bin 0."""
    k = fine.shape[0]
    coarse = torch.zeros(k, N_BINS + 1, dtype=fine.dtype, device=fine.device)
    coarse.index_add_(1, _lut(torch, fine.device), fine)
    coarse = coarse[:, :N_BINS]
    zeros = zeros.to(fine.dtype)
    coarse[:, 1] -= zeros
    coarse[:, 0] = zeros
    return coarse


def _reduce_one(torch: Any, t: Any, scratch: Any = None) -> Any:
    """On the CPU: ``(statistics as floats with the zero count, fine counts)``, or a whole row
    (the masked path). The reads (``float``, ``bool``) copy nothing: the values are on the host.
    ``scratch``: a float32 buffer of at least ``t.numel()`` elements for ``|x|`` (else one is made)."""
    x, x32 = _as_float(torch, t)
    n = x.numel()
    if n == 0:
        return _reduce_group(torch, [t])[0]
    total = float(x.sum())
    if not math.isfinite(total):  # NaN or Inf in it (or a sum past the float range): masked path
        return _reduce_group(torch, [t])[0]
    # One |x| for L1 (vector_norm(x, 1) is 5x slower) and, shifted in place once L1 is read, the
    # histogram's bits: no allocation when the caller lends a buffer.
    a32 = torch.abs(x32, out=scratch[:n]) if scratch is not None else x32.abs()
    a = a32 if x is x32 else x.abs()
    l1 = float(a.sum())
    bits = a32.view(torch.int32)
    bits >>= 19
    fine = torch.bincount(bits, minlength=FINE)
    mean = total / n
    lo, hi = torch.amin(x), torch.amax(x)  # on finite values; 2x faster on the CPU than aminmax
    l2 = float(torch.linalg.vector_norm(x))
    # The variance from the sum of squares, unless the mean is large beside the spread (then the
    # subtraction would cancel): two passes only for those tensors (LayerNorm weights, say).
    sq = l2 * l2 / n
    if mean * mean > 1e-3 * sq:
        std = float(torch.linalg.vector_norm(x - mean)) / math.sqrt(n)
    else:
        std = math.sqrt(max(sq - mean * mean, 0.0))
    # Exact zeros and float32 subnormals below 2^-130 share fine bin 0: count only when it is used.
    zeros = n - int(torch.count_nonzero(x)) if int(fine[0]) else 0
    return [float(lo), float(hi), mean, std, l1, l2, 0.0, 0.0, float(zeros), float(n)], fine


def _reduce_group(torch: Any, tensors: Sequence[Any]) -> Any:
    device = tensors[0].device
    pairs = [_as_float(torch, t) for t in tensors]
    dt = torch.float64 if any(p[0].dtype == torch.float64 for p in pairs) else torch.float32
    out_dt = torch.float32 if device.type == "mps" else torch.float64
    k = len(pairs)
    if k == 1:
        flat, flat32 = pairs[0][0].to(dt), pairs[0][1]
    else:
        flat = torch.cat([p[0].to(dt) for p in pairs])
        flat32 = flat if dt == torch.float32 else torch.cat([p[1] for p in pairs])
    lengths = torch.tensor([p[0].numel() for p in pairs], device=device, dtype=torch.int64)
    seg = torch.repeat_interleave(torch.arange(k, device=device), lengths)

    def seg_sum(values: Any) -> Any:
        return torch.zeros(k, dtype=values.dtype, device=device).index_add_(0, seg, values)

    finite = torch.isfinite(flat)
    z = torch.where(finite, flat, 0)
    numel = lengths.to(dt)
    n_finite = seg_sum(finite.to(dt))
    nan = seg_sum(torch.isnan(flat).to(dt))
    inf = numel - n_finite - nan
    lo = torch.full((k,), math.inf, dtype=dt, device=device)
    lo = lo.scatter_reduce_(0, seg, torch.where(finite, flat, math.inf), "amin")
    hi = torch.full((k,), -math.inf, dtype=dt, device=device)
    hi = hi.scatter_reduce_(0, seg, torch.where(finite, flat, -math.inf), "amax")
    mean = seg_sum(z) / n_finite
    d = torch.where(finite, z - mean[seg], 0)
    std = (seg_sum(d * d) / n_finite).sqrt()
    l1 = seg_sum(z.abs())
    l2 = seg_sum(z * z).sqrt()
    zeros = seg_sum((flat == 0).to(dt))
    none = n_finite == 0
    nan_stat = torch.full((k,), math.nan, dtype=dt, device=device)
    moments = [torch.where(none, nan_stat, s) for s in (lo, hi, mean, std, l1, l2)]
    with_empty = torch.where(numel == 0, nan_stat, zeros / numel.clamp(min=1))
    stats = torch.stack([*moments, nan, inf, with_empty, numel], dim=1)
    counts = _coarse(torch, _fine_counts(torch, flat32, seg, k), zeros.to(torch.int64))
    return torch.cat([stats.to(out_dt), counts.to(out_dt)], dim=1)


def _to_device(torch: Any, values: Sequence[int], device: Any) -> Any:
    """Host integers as an int64 tensor on ``device``; to a GPU through pinned memory, not
    waited for (a copy from pageable memory synchronises the stream)."""
    host = torch.tensor(values, dtype=torch.int64)
    if device.type != "cuda":
        return host.to(device)
    return host.pin_memory().to(device, non_blocking=True)


ROW_LEN = 1024
"""Values per row of ``_reduce_rows``'s layout: each tensor's partials are its rows'."""


def _reduce_rows(torch: Any, tensors: Sequence[Any]) -> Any:
    """``(len(tensors), ROW)`` rows on a GPU, from the values laid out in rows (module docstring):
    every pass is a dense reduction along rows, the per-tensor sums run over rows, not values."""
    device = tensors[0].device
    pairs = [_as_float(torch, t) for t in tensors]
    dt = torch.float64 if any(p[0].dtype == torch.float64 for p in pairs) else torch.float32
    acc = torch.float32 if device.type == "mps" else torch.float64  # the per-tensor sums
    k = len(pairs)
    sizes = [p[0].numel() for p in pairs]
    rows_of = [max(1, -(-n // ROW_LEN)) for n in sizes]  # an empty tensor: one row of padding
    pads = [r * ROW_LEN - n for r, n in zip(rows_of, sizes, strict=True)]
    pad = torch.full((max(pads),), math.nan, dtype=dt, device=device) if max(pads) else None

    def laid_out(values: list[Any], dtype: Any) -> Any:
        pieces: list[Any] = []
        for v, n in zip(values, pads, strict=True):
            pieces.append(v.to(dtype))
            if n:
                pieces.append(pad[:n].to(dtype))  # type: ignore[index]
        return torch.cat(pieces).view(-1, ROW_LEN)

    x = laid_out([p[0] for p in pairs], dt)
    x32 = x if dt == torch.float32 else laid_out([p[1] for p in pairs], torch.float32)
    row_seg = _to_device(torch, [i for i, r in enumerate(rows_of) for _ in range(r)], device)
    host = _to_device(torch, [*sizes, *pads], device).to(acc)
    numel, padded = host[:k], host[k:]

    def seg_sum(per_row: Any) -> Any:  # a few rows per tensor: no hot address
        return torch.zeros(k, dtype=acc, device=device).index_add_(0, row_seg, per_row.to(acc))

    finite = torch.isfinite(x)
    z = torch.where(finite, x, 0)
    n_finite = seg_sum(finite.sum(1, dtype=dt))
    nan = seg_sum(torch.isnan(x).sum(1, dtype=dt)) - padded
    inf = numel - n_finite - nan
    lo = torch.full((k,), math.inf, dtype=acc, device=device)
    lo = lo.scatter_reduce_(0, row_seg, torch.where(finite, x, math.inf).amin(1).to(acc), "amin")
    hi = torch.full((k,), -math.inf, dtype=acc, device=device)
    hi = hi.scatter_reduce_(0, row_seg, torch.where(finite, x, -math.inf).amax(1).to(acc), "amax")
    mean = seg_sum(z.sum(1)) / n_finite
    d = torch.where(finite, x - mean.to(dt)[row_seg][:, None], 0)
    std = (seg_sum((d * d).sum(1)) / n_finite).sqrt()
    l1 = seg_sum(z.abs().sum(1))
    l2 = seg_sum((z * z).sum(1)).sqrt()
    zeros = seg_sum((x == 0).sum(1, dtype=dt))
    none = n_finite == 0
    nan_stat = torch.full((k,), math.nan, dtype=acc, device=device)
    moments = [torch.where(none, nan_stat, s) for s in (lo, hi, mean, std, l1, l2)]
    with_empty = torch.where(numel == 0, nan_stat, zeros / numel.clamp(min=1))
    stats = torch.stack([*moments, nan, inf, with_empty, numel], dim=1)
    # Fine bins: (tensor, bin) keys sorted, each key's count from the bounds of its run. The NaN
    # padding falls in bins the fold drops, as the values' own NaN and Inf do.
    keys = (row_seg.to(torch.int32)[:, None] * FINE + ((x32.view(torch.int32) >> 19) & 0xFFF)).reshape(-1)
    edges = torch.arange(k * FINE + 1, device=device, dtype=torch.int32)
    bounds = torch.searchsorted(torch.sort(keys).values, edges)
    fine = (bounds[1:] - bounds[:-1]).view(k, FINE)
    counts = _coarse(torch, fine, zeros.to(torch.int64))
    return torch.cat([stats, counts.to(acc)], dim=1)


def counts_row(counts: Sequence[int]) -> list[float]:
    """The row of a tensor of class indices from its count of each class (``counts[k]`` values
    equal to ``k``), on the host: what it costs is one pass over the classes, not the labels."""
    n = sum(counts)
    if not n:
        return [*([math.nan] * 6), 0.0, 0.0, math.nan, 0.0, *([0.0] * N_BINS)]
    present = [k for k, c in enumerate(counts) if c]
    total = sum(k * c for k, c in enumerate(counts))
    squares = sum(k * k * c for k, c in enumerate(counts))
    mean = total / n
    std = math.sqrt(max(squares / n - mean * mean, 0.0))
    hist = [0.0] * N_BINS
    for k in present:
        hist[0 if k == 0 else bisect.bisect_right(HIST_EDGES, k) + 1] += counts[k]
    stats = [float(present[0]), float(present[-1]), mean, std, float(total), math.sqrt(squares)]
    return [*stats, 0.0, 0.0, counts[0] / n, float(n), *hist]


def scalar_row(value: float) -> list[float]:
    """The row of a one-element tensor from its value on the host (losses: no kernel at all)."""
    finite = math.isfinite(value)
    nan = float(math.isnan(value))
    moments = [value, value, value, 0.0, abs(value), abs(value)] if finite else [math.nan] * 6
    counts = [0.0] * N_BINS
    if finite:
        a = abs(value)
        counts[0 if a == 0 else bisect.bisect_right(HIST_EDGES, a) + 1] = 1.0
    return [*moments, nan, float(not finite) - nan, float(value == 0), 1.0, *counts]
