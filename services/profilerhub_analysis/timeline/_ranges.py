"""Range queries over one flat array, answered for many ranges at once.

``RangeArgMax`` answers "which element of ``values[i:j]`` is the largest" in O(1) per range after an
O(n) build; ``RangeAtLeast`` (its base) "which elements of ``values[i:j]`` reach a threshold" in
time proportional to the range length / 64 plus the answer. Both work on a flat array holding many
rows back to back: a range never crosses a row, so blocks that straddle two rows do no harm.

Layout (block size ``B`` = 64): per block its argmax, a sparse table over blocks (argmax of
``2**k`` consecutive blocks), and per element the offset of the argmax of its block's prefix up to
it and of its block's suffix from it. A range spanning several blocks is then the best of four
candidates (suffix of the first block, two sparse-table lookups, prefix of the last block); a
range inside one block is scanned directly (at most 64 elements). Ties go to the leftmost element.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import scratch

BLOCK = 64

IntArray = npt.NDArray[np.int64]


def concat_ranges(starts: npt.ArrayLike, stops: npt.ArrayLike) -> IntArray:
    """``concatenate([arange(a, b) for a, b in zip(starts, stops)])`` without a Python loop."""
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.maximum(np.asarray(stops, dtype=np.int64) - starts, 0)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    keep = lengths > 0
    starts, lengths = starts[keep], lengths[keep]
    # Each element is its range's start plus its position within the range.
    offsets = np.cumsum(lengths) - lengths
    out = np.arange(total, dtype=np.int64)
    out -= np.repeat(offsets - starts, lengths)
    return out


def held_bytes(*objects: object) -> int:
    """Bytes of the numpy arrays the objects hold as attributes, each array counted once."""
    arrays = {id(v): v.nbytes for o in objects for v in vars(o).values() if isinstance(v, np.ndarray)}
    return sum(arrays.values())


def _lowest(dtype: np.dtype) -> int | float:
    return float("-inf") if np.issubdtype(dtype, np.floating) else int(np.iinfo(dtype).min)


def _blocks_of(values: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
    """``values`` padded with the lowest value to whole blocks, as a (blocks, BLOCK) grid."""
    nb = max(1, -(-len(values) // BLOCK))
    padded = np.full(nb * BLOCK, _lowest(values.dtype), dtype=values.dtype)
    padded[: len(values)] = values
    return padded.reshape(nb, BLOCK)


def _grids(values: npt.NDArray[np.generic]) -> Iterator[tuple[int, npt.NDArray[np.generic]]]:
    """``(first block, grid)`` of ``_blocks_of(values)``, ``scratch.CHUNK`` elements at a time."""
    step = max(BLOCK, scratch.CHUNK // BLOCK * BLOCK)
    for start in range(0, max(len(values), 1), step):
        yield start // BLOCK, _blocks_of(values[start : start + step])


def _block_offsets(grid: npt.NDArray[np.generic]) -> tuple[np.ndarray, np.ndarray]:
    """Per element of a (blocks, BLOCK) grid: the offsets (int8) of the argmax of its block's
    prefix up to it and of its block's suffix from it (leftmost on ties)."""
    pos = np.broadcast_to(np.arange(BLOCK, dtype=np.int8), grid.shape)
    # Prefix argmax within each block: the last position where the running max rose.
    run = np.maximum.accumulate(grid, axis=1)
    rose = np.ones(grid.shape, dtype=bool)
    rose[:, 1:] = run[:, 1:] > run[:, :-1]
    prefix = np.maximum.accumulate(np.where(rose, pos, 0), axis=1).ravel()
    # Suffix argmax within each block, leftmost on ties: scan the reversed block and keep the
    # last position (in reversed order) where the running max was reached or exceeded.
    rgrid = grid[:, ::-1]
    rrun = np.maximum.accumulate(rgrid, axis=1)
    reached = np.ones(grid.shape, dtype=bool)
    reached[:, 1:] = rgrid[:, 1:] >= rrun[:, :-1]
    rpos = np.maximum.accumulate(np.where(reached, pos, 0), axis=1)
    return prefix.astype(np.int8), (BLOCK - 1 - rpos[:, ::-1]).astype(np.int8).ravel()


class RangeAtLeast:
    """Which elements of ``values[i:j]`` reach a threshold, for sorted disjoint ranges."""

    def __init__(self, values: npt.NDArray[np.generic]) -> None:
        self.values = values
        self.n = len(values)
        self.block_max = np.concatenate(
            [grid.max(axis=1) for _, grid in _grids(values)] or [np.zeros(0, values.dtype)]
        )

    def at_least(self, lo: npt.ArrayLike, hi: npt.ArrayLike, threshold: float) -> IntArray:
        """Sorted indices ``i`` with ``values[i] >= threshold`` inside any ``[lo[k], hi[k])``.

        The ranges must be sorted and disjoint. Cost: one look per block the ranges touch, then
        64 looks per block that holds a match.
        """
        lo = np.asarray(lo, dtype=np.int64)
        hi = np.asarray(hi, dtype=np.int64)
        keep = hi > lo
        lo, hi = lo[keep], hi[keep]
        if len(lo) == 0:
            return np.zeros(0, dtype=np.int64)
        blocks = concat_ranges(lo // BLOCK, (hi - 1) // BLOCK + 1)
        blocks = np.unique(blocks[self.block_max[blocks] >= threshold])
        if len(blocks) == 0:
            return np.zeros(0, dtype=np.int64)
        idx = (blocks[:, None] * BLOCK + np.arange(BLOCK, dtype=np.int64)[None, :]).ravel()
        idx = idx[idx < self.n]
        idx = idx[self.values[idx] >= threshold]
        which = np.searchsorted(lo, idx, side="right") - 1
        inside = (which >= 0) & (idx < hi[np.maximum(which, 0)])
        return idx[inside]


class RangeArgMax(RangeAtLeast):
    """Leftmost argmax of ``values[i:j]`` for arrays of ranges; see the module docstring."""

    def __init__(self, values: npt.NDArray[np.generic]) -> None:
        super().__init__(values)
        n = self.n
        nb = max(1, -(-n // BLOCK))
        # Per element, within its block: the offset of the argmax of the block's prefix up to it
        # and of its suffix from it. Computed a few thousand blocks at a time (the temporaries of
        # one chunk; the results are one int8 each, file-backed when large).
        self._prefix = scratch.empty(n, np.int8)
        self._suffix = scratch.empty(n, np.int8)
        block_arg = np.empty(nb, dtype=np.int64)
        for first, grid in _grids(values):
            start, stop = first * BLOCK, min(n, (first + len(grid)) * BLOCK)
            prefix, suffix = _block_offsets(grid)
            self._prefix[start:stop] = prefix[: stop - start]
            self._suffix[start:stop] = suffix[: stop - start]
            blocks = np.arange(first, first + len(grid), dtype=np.int64)
            block_arg[first : first + len(grid)] = blocks * BLOCK + grid.argmax(axis=1)

        # Sparse table over blocks, all levels in one flat array: level k holds, for each block
        # i, the element index of the argmax of blocks i .. i + 2**k - 1.
        levels: list[IntArray] = [block_arg]
        vals: Any = self.values  # numpy's stubs cannot compare arrays of a generic dtype
        span = 1
        while n and 2 * span <= nb:
            prev = levels[-1]
            left, right = prev[: len(prev) - span], prev[span:]
            levels.append(np.where(vals[right] > vals[left], right, left))
            span *= 2
        index_type = np.int32 if n < 2**31 else np.int64
        self._table = np.concatenate(levels).astype(index_type)
        self._table_offset = np.concatenate([[0], np.cumsum([len(level) for level in levels])])

    def argmax(self, lo: npt.ArrayLike, hi: npt.ArrayLike) -> IntArray:
        """Index of the leftmost largest value in each ``values[lo[k]:hi[k]]`` (all non-empty)."""
        lo = np.asarray(lo, dtype=np.int64)
        hi = np.asarray(hi, dtype=np.int64)
        out = np.empty(len(lo), dtype=np.int64)
        if len(lo) == 0:
            return out
        low = _lowest(self.values.dtype)
        first_block, last_block = lo // BLOCK, (hi - 1) // BLOCK
        inside = first_block == last_block

        # Ranges inside one block: scan them (at most 64 elements each).
        if inside.any():
            a, b = lo[inside], hi[inside]
            cols = a[:, None] + np.arange(int((b - a).max()), dtype=np.int64)[None, :]
            vals = self.values[np.minimum(cols, self.n - 1)]
            vals = np.where(cols < b[:, None], vals, low)
            out[inside] = a + vals.argmax(axis=1)

        across = ~inside
        if across.any():
            a, b = lo[across], hi[across]
            fb, lb = first_block[across], last_block[across]
            head = fb * BLOCK + self._suffix[a]
            tail = lb * BLOCK + self._prefix[b - 1]
            middle = lb - fb - 1
            has_middle = middle > 0
            # floor(log2(middle)), exactly, for middle >= 1.
            level = np.frexp(np.maximum(middle, 1))[1].astype(np.int64) - 1
            base = self._table_offset[level]
            # Without middle blocks the two table candidates fall back to the head (a tie, no win).
            mid_left = np.where(has_middle, self._table[base + np.where(has_middle, fb + 1, 0)], head)
            mid_right_pos = np.where(has_middle, lb - (np.int64(1) << level), 0)
            mid_right = np.where(has_middle, self._table[base + mid_right_pos], head)
            # Candidates left to right; only a strictly larger value wins, so ties stay leftmost.
            best, best_val = head, self.values[head]
            for cand in (mid_left, mid_right, tail):
                val = self.values[cand]
                wins = val > best_val
                best = np.where(wins, cand, best)
                best_val = np.where(wins, val, best_val)
            out[across] = best
        return out
