"""What counts as tensor-core work: the plugin's lists (its ``tensor_core.py``, as the oracle states
them), and the same names with those of the libraries of GPUs since (``TC_KERNEL_CURRENT``).

The plugin's kernel names stop at Volta/Turing-era cuBLAS and cuDNN; on a Hopper GPU cuBLAS runs
its GEMMs as ``nvjet_sm90_*`` kernels and cuDNN's attention as ``*_wgmma_*`` ones, which the plugin
counts as no tensor-core work at all (a bf16 vision transformer on an H200: 0.01 % by its names).
The views keep the plugin's figure, which its users compare against; ``facts`` adds the current
one, and the recommendation reads that.
"""

from __future__ import annotations

import re

_TC_KERNEL_PATTERNS = (
    "h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816", "dgrad_1x1_stride_2x2",
    "first_layer_wgrad_kernel", "conv1x1", "conv2d_c1_k1", "direct_group", "xmma_implicit_gemm",
    "xmma_sparse_conv", "xmma_warp_specialized_implicit_gemm", "xmma_gemm", "xmma_sparse_gemm", "c1688",
)  # fmt: skip
_TC_KERNEL = re.compile("|".join(map(re.escape, _TC_KERNEL_PATTERNS)))


def TC_KERNEL(name: str) -> bool:  # noqa: N802 - reads as the plugin's allow-list
    """A kernel that used tensor cores (its name contains one of the plugin's patterns)."""
    return _TC_KERNEL.search(name) is not None


#: Names of tensor-core kernels the plugin's list misses: cuBLAS's Hopper GEMMs (``nvjet``),
#: warpgroup MMA (``wgmma``, Hopper) and tcgen05 (Blackwell), CUTLASS's ``tensorop`` kernels (also
#: ``cutlass_*_wmma_tensorop``), Ampere's int8 GEMMs (``i16832``, ``imma``) and flash attention's
#: (FlashAttention, cuDNN's ``flash_fprop``/``flash_bprop``, xFormers' ``fmha``).
_TC_KERNEL_PATTERNS_SINCE = (
    "nvjet", "wgmma", "tcgen05", "tensorop", "i16832", "imma", "flash_fwd", "flash_bwd",
    "flash_fprop", "flash_bprop", "fmha",
)  # fmt: skip
_TC_KERNEL_CURRENT = re.compile("|".join(map(re.escape, _TC_KERNEL_PATTERNS + _TC_KERNEL_PATTERNS_SINCE)))


def TC_KERNEL_CURRENT(name: str) -> bool:  # noqa: N802 - reads as TC_KERNEL
    """A kernel that used tensor cores by the plugin's names or those of the GPUs since."""
    return _TC_KERNEL_CURRENT.search(name) is not None


#: Operators eligible for tensor cores (the plugin's ``TC_OP_Allowlist``).
TC_OPERATORS = frozenset(
    """aten::_convolution aten::conv1d aten::conv2d aten::conv3d aten::conv_tbc aten::conv_transpose1d
    aten::conv_transpose2d aten::conv_transpose3d aten::convolution aten::cudnn_convolution
    aten::cudnn_convolution_transpose aten::prelu aten::addmm aten::addmv aten::addr aten::matmul aten::mm
    aten::mv aten::linear aten::addbmm aten::baddbmm aten::bmm aten::chain_matmul aten::linalg_multi_dot
    aten::_thnn_fused_lstm_cell aten::_thnn_fused_gru_cell aten::lstm_cell aten::gru_cell aten::rnn_tanh_cell
    aten::rnn_relu_cell CudnnConvolutionBackward BmmBackward0 aten::cudnn_convolution_transpose_backward
    CudnnConvolutionTransposeBackward MmBackward aten::cudnn_convolution_backward_weight aten::addmm_
    AddmvBackward MvBackward aten::cudnn_convolution_transpose_backward_weight
    aten::cudnn_convolution_transpose_backward_input AddmmBackward aten::cudnn_convolution_backward_input
    AddbmmBackward aten::cudnn_convolution_backward""".split()  # noqa: SIM905 - the list as the plugin spells it
)

__all__ = ["TC_KERNEL", "TC_KERNEL_CURRENT", "TC_OPERATORS"]
