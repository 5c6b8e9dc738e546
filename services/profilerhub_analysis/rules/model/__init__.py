"""Model rules: SageMaker Debugger's convergence rules over a job's ``ph.watch`` reductions
(``RuleData.tensors``, a ``profilerhub_analysis.tensors.TensorTable``), with its names, parameters
and defaults; where SageMaker's definition is vague, each module's docstring says what ProfilerHub
chose (and ``docs/debugging.md``). ``MEMBERS`` in registry order; ``TENSOR_RULES``: those that
read tensors (StalledTrainingRule works without them)."""

from __future__ import annotations

from profilerhub_analysis.rules.model import (
    all_zero,
    class_imbalance,
    dead_relu,
    exploding_tensor,
    loss_not_decreasing,
    overfit,
    overtraining,
    poor_weight_initialization,
    saturated_activation,
    stalled_training,
    tensor_variance,
    unchanged_tensor,
    vanishing_gradient,
    weight_update_ratio,
)

MEMBERS = (
    vanishing_gradient.SPEC,
    exploding_tensor.SPEC,
    overfit.SPEC,
    overtraining.SPEC,
    loss_not_decreasing.SPEC,
    weight_update_ratio.SPEC,
    saturated_activation.SPEC,
    dead_relu.SPEC,
    poor_weight_initialization.SPEC,
    tensor_variance.SPEC,
    all_zero.SPEC,
    unchanged_tensor.SPEC,
    class_imbalance.SPEC,
    stalled_training.SPEC,
)
TENSOR_RULES = tuple(spec.name for spec in MEMBERS if spec is not stalled_training.SPEC)

__all__ = ["MEMBERS", "TENSOR_RULES"]
