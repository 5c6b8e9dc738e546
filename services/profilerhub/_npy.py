"""A CPU torch tensor as a ``.npy`` file (format 1.0), without numpy: what ``full_tensors`` write.

``numpy.load`` reads it back (the trial does). bfloat16 has no numpy type: it is written as
float32.
"""

from __future__ import annotations

import sys
from typing import Any

_DESCR = {
    "torch.float64": "f8",
    "torch.float32": "f4",
    "torch.float16": "f2",
    "torch.int64": "i8",
    "torch.int32": "i4",
    "torch.int16": "i2",
    "torch.int8": "i1",
    "torch.uint8": "u1",
    "torch.bool": "b1",
}


def npy_bytes(t: Any) -> bytes:
    """The ``.npy`` bytes of ``t`` (on the CPU), C order."""
    import torch

    if str(t.dtype) not in _DESCR:
        t = t.to(torch.float32)
    t = t.detach().contiguous().clone()  # clone: a storage holding exactly this tensor's elements
    order = "|" if t.element_size() == 1 else ("<" if sys.byteorder == "little" else ">")
    shape = ", ".join(str(d) for d in t.shape) + ("," if t.dim() == 1 else "")
    header = f"{{'descr': '{order}{_DESCR[str(t.dtype)]}', 'fortran_order': False, 'shape': ({shape}), }}"
    pad = 64 - (10 + len(header) + 1) % 64
    head = (header + " " * pad + "\n").encode("latin1")
    return b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head + bytes(t.untyped_storage())
