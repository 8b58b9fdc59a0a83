"""Students pruned from a real teacher, then healed (the zoo's default recipe, ``recipe="pruned"``).

Small language models are built today by removing parts of a trained model and training what is
left for a short while, not by training from random weights (Minitron: Muralidharan et al. 2024,
"Compact Language Models via Pruning and Knowledge Distillation"; Sheared-LLaMA: Xia et al. 2024).
A student here is

1. **depth**: the teacher's layers with the highest block importance
   (:func:`helpers.training.prune.block_importance`, ShortGPT: Men et al. 2024), in order;
2. **width**: attention heads and MLP channels ranked by activation importance on a calibration
   sample (:func:`helpers.training.prune.activation_importance`, Minitron);
3. **healing** for a fixed budget with one of two objectives, which map onto seed 000's two
   families (Table 7: "pre-trained" vs "distilled"): ``"lm"`` — the language-model loss on the
   corpus alone — or ``"kd"`` — knowledge distillation from the teacher
   (:func:`helpers.training.distill.distillation_loss`, top-k + tail for large vocabularies). Both
   objectives see the same batches (:data:`helpers.training.distill.KD_PHASES`).

A student is written as ``L<layers>[-I<mlp channels>][-A<heads>]``, e.g. ``L24-I768``: 24 layers,
768 MLP channels per layer, the teacher's heads. Dimensions not given are the teacher's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from helpers.errors import InputError
from helpers.models.loading import without_quantizer
from helpers.training import distill, prune

OBJECTIVES = {"lm": "heal-lm", "kd": "heal-kd"}
#: Healing writes its checkpoint (weights and AdamW state, about 1.5 GB for a SmolLM2 student) at
#: most this often: writing it every few steps took a third of the zoo's time (benchmarks/RESULTS.md,
#: "Where the time goes"); a kill loses at most this much healing.
CHECKPOINT_SECONDS = 30.0
_SPEC = re.compile(r"^L(\d+)(?:-I(\d+))?(?:-A(\d+))?$")


@dataclass(frozen=True)
class StudentSpec:
    """The shape asked for: layers, and MLP channels / attention heads (None = the teacher's)."""

    layers: int
    intermediate: int | None = None
    heads: int | None = None

    @property
    def label(self) -> str:
        return (f"L{self.layers}" + (f"-I{self.intermediate}" if self.intermediate else "")
                + (f"-A{self.heads}" if self.heads else ""))


def parse(text: str) -> StudentSpec:
    """``"L24-I768-A6"`` -> StudentSpec(24, 768, 6); one InputError line for anything else."""
    m = _SPEC.match(str(text).strip())
    if not m:
        raise InputError(f"student shape {text!r}: expected L<layers>[-I<mlp channels>][-A<heads>], e.g. 'L24-I768'")
    layers, inter, heads = (int(g) if g else None for g in m.groups())
    return StudentSpec(layers, inter, heads)


def teacher_shape(config) -> dict:
    """Layers, attention heads, key-value heads, MLP channels and hidden size of a teacher config."""
    cfg = getattr(config, "text_config", None) or config
    return {"layers": cfg.num_hidden_layers, "heads": cfg.num_attention_heads,
            "kv_heads": getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads,
            "intermediate": cfg.intermediate_size, "hidden": cfg.hidden_size}


def check(specs, config, *, teacher: str) -> list[StudentSpec]:
    """Parse and check every student against the teacher's shape before any work is done
    (:func:`helpers.training.prune.check_shape`: more layers than the teacher has, heads that do
    not divide into its key-value groups, more MLP channels than it has: one line each)."""
    out = []
    for s in specs:
        spec = s if isinstance(s, StudentSpec) else parse(s)
        try:
            prune.check_shape(config, layers=spec.layers, heads=spec.heads, intermediate=spec.intermediate)
        except InputError as e:
            raise InputError(f"zoo student {spec.label} of teacher {teacher}: {e}") from None
        out.append(spec)
    return out


def build(teacher_model, spec: StudentSpec, *, block_importance, activation_importance):
    """The pruned (not yet healed) student: a new, ordinary fp32 model (a teacher loaded from a
    GGUF file leaves no quantizer state on it, :func:`helpers.models.loading.without_quantizer`);
    the teacher is not modified."""
    keep = prune.layers_to_keep(block_importance, spec.layers)
    return without_quantizer(prune.prune(teacher_model, keep_layers=keep, heads=spec.heads,
                                         intermediate=spec.intermediate, importance=activation_importance))


def heal(student, blocks: torch.Tensor, *, objective: str, steps: int, batch_size: int, lr: float, seed: int,
         arch: str, tokenizer=None, mask_prob: float = 0.15, teacher_fn=None, temperature: float = 1.0,
         checkpoint=None, progress: bool = True, warmup: float = 0.1,
         checkpoint_seconds: float = CHECKPOINT_SECONDS) -> dict:
    """Train every parameter of ``student`` in place for ``steps`` steps of ``batch_size`` blocks
    with the LM loss (``objective="lm"``) or distillation from ``teacher_fn`` (``"kd"``,
    :func:`helpers.training.distill.teacher_targets`); resumes from ``checkpoint``, written after a
    step once ``checkpoint_seconds`` have passed since the last write."""
    if objective not in OBJECTIVES:
        raise InputError(f"healing objective {objective!r}: expected one of {', '.join(OBJECTIVES)}")
    if steps <= 0:
        return {"phase": OBJECTIVES[objective], "steps": 0, "final_loss": float("nan"), "losses": [],
                "seconds": 0.0, "tokens_this_run": 0}
    cfg = distill.TrainConfig(steps=steps, batch_size=batch_size, lr=lr, warmup=warmup, seed=seed,
                              temperature=temperature, mask_prob=mask_prob, checkpoint_every=1,
                              checkpoint_seconds=checkpoint_seconds)
    return distill.train(student, blocks, cfg, arch=arch, tokenizer=tokenizer, phase=OBJECTIVES[objective],
                         teacher=teacher_fn if objective == "kd" else None, checkpoint=checkpoint,
                         progress=progress)
