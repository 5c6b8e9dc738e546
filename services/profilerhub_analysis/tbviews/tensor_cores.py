"""What the plugin counts as tensor-core work (its ``tensor_core.py`` lists, as the oracle states them)."""

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

__all__ = ["TC_KERNEL", "TC_OPERATORS"]
