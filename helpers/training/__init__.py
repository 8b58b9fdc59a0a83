"""Training the book's own models: pre-training and distillation loops, and the model zoo."""

import functools


@functools.cache
def fused_adamw_available() -> bool:
    """Whether this torch has AdamW's fused CPU kernel (torch >= 2.4)."""
    import torch

    try:
        torch.optim.AdamW([torch.zeros(1, requires_grad=True)], fused=True)
    except (RuntimeError, TypeError):
        return False
    return True


def adamw_name() -> str:
    """The optimizer :func:`adamw` builds, for the cache keys of what it trains."""
    return "adamw-fused" if fused_adamw_available() else "adamw"


def adamw(params, *, lr: float):
    """``torch.optim.AdamW`` with its fused kernel where torch has one: the transformers Trainer's
    default (``adamw_torch_fused``) and the same update as the per-tensor loop up to float rounding,
    4.9 times faster on a BERT-base classifier's 201 tensors on 2 CPU cores (0.067 s a step
    against 0.33; the per-tensor loop was 62 s of a cold default build)."""
    import torch

    return torch.optim.AdamW(params, lr=lr, **({"fused": True} if fused_adamw_available() else {}))
