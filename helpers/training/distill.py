"""Pre-training and knowledge distillation of small students (seed 000, section 4.7, appendix A.5).

The paper pre-trains students with the language-modelling objective, then distils each
from a teacher "using cross-entropy loss over the soft target probabilities" (Hinton et
al. 2015). This module does the same with a plain torch loop (AdamW, linear warm-up and
decay) over packed token blocks:

- GPT-2 architecture (causal LM, ``GPT2LMHeadModel``) and BERT architecture (masked LM,
  ``BertForMaskedLM``; 15 % of tokens selected by default (``mask_prob``; the zoo's masked family
  uses 40 %, Wettig et al. 2023), 80/10/10 mask/random/keep).
- Students on a grid of layers x hidden size, heads = hidden / 64 (at least 2).
- Distillation loss (:func:`distillation_loss`), per scored position i::

      L_KD = T^2 * KL( softmax(t_i / T) || softmax(s_i / T) )
           = T^2 * ( CE(softmax(t_i/T), softmax(s_i/T)) - H(softmax(t_i/T)) )

  averaged over the scored positions (every position for causal LMs, the masked
  positions for masked LMs). It differs from the soft cross-entropy of the paper only by
  the teacher entropy, a constant for the student, so the gradients are the same.
  The T^2 factor keeps gradient magnitudes comparable across temperatures (Hinton et al.).
  The total loss is ``alpha * L_LM + (1 - alpha) * L_KD`` (``alpha=0``: pure distillation,
  the paper's setting).
- Top-k approximation (``top_k``), used for the 49,152-token SmolLM2 teacher so teacher
  outputs can be cached for all students (they share data order and masking). The teacher
  keeps its k most probable tokens plus one *tail* bucket holding the rest of its probability
  mass at temperature T; the student's tail is its own mass outside those k tokens. The loss
  is the exact KL between the two distributions over these k + 1 outcomes::

      L = T^2 * ( sum_k p_k (log p_k - log q_k) + p_tail (log p_tail - log q_tail) )

  With k = V the tail is empty and this is exactly the full KL. Without the tail bucket
  (teacher renormalised over its top k: ``teacher_targets(..., temperature=None)``) nothing
  keeps the student's mass on tokens outside the teacher's top k, and held-out perplexity
  grows during distillation (measured on the zoo: 2,400 -> 17,000 in 40 steps; with the tail
  bucket it falls).
- Determinism: batches (order and masks) are a pure function of (seed, phase, step); the
  dropout RNG state is saved in each checkpoint, so a resumed run equals an uninterrupted one.
- Checkpoints: one file, written atomically (:func:`helpers.tables.atomic_path`).
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterable, Literal

import torch
import torch.nn.functional as F

from helpers import tables
from helpers.errors import InputError
from helpers.lm.conventions import pack_blocks  # noqa: F401  (re-exported)
from helpers.metrics.quality import heldout_perplexity, mask_tokens  # noqa: F401  (moved; re-exported)
from helpers.progress import progress as progress_bar
from helpers.training import adamw

Arch = Literal["gpt2", "bert"]
PHASES = {"pretrain": 0, "distill": 1, "teacher": 2, "heal-lm": 3, "heal-kd": 3}
#: Phases whose loss is knowledge distillation from a teacher; the rest use the LM loss. The two
#: healing phases of pruned students share their salt: both objectives see the same batches.
KD_PHASES = ("distill", "heal-kd")


# --------------------------------------------------------------------------- shapes
@dataclass(frozen=True)
class StudentShape:
    layers: int
    hidden: int
    heads: int

    @property
    def label(self) -> str:
        return f"L{self.layers}-H{self.hidden}"


def student_shape(layers: int, hidden: int, heads: int | None = None) -> StudentShape:
    """Validate one grid point; ``heads`` defaults to hidden / 64, at least 2 (seed 000 Tables 6-7)."""
    for what, v in (("layers", layers), ("hidden", hidden)):
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise InputError(f"student shape: {what} must be a positive integer, got {v!r}")
    if heads is None:
        heads = max(2, hidden // 64)
    if not isinstance(heads, int) or heads <= 0:
        raise InputError(f"student shape: heads must be a positive integer, got {heads!r}")
    if hidden % heads:
        raise InputError(f"student shape L={layers} H={hidden}: hidden size {hidden} is not "
                         f"divisible by {heads} attention heads")
    return StudentShape(layers, hidden, heads)


def grid(layers: Iterable[int], hidden: Iterable[int]) -> list[StudentShape]:
    """All (layers x hidden) shapes, validated; an impossible shape raises InputError."""
    return [student_shape(l, h) for h in hidden for l in layers]


def build_student(arch: Arch, shape: StudentShape, tokenizer, *, block_size: int = 128,
                  dropout: float = 0.1, seed: int = 0):
    """A randomly initialised GPT-2 (causal) or BERT (masked) student of ``shape``.

    Every student shares these hyper-parameters; only the architecture differs
    (seed 000 appendix A.5). Initialisation is seeded by ``seed``.
    """
    from transformers import BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    vocab = len(tokenizer)
    if arch == "gpt2":
        eos = tokenizer.eos_token_id
        cfg = GPT2Config(vocab_size=vocab, n_positions=block_size, n_embd=shape.hidden,
                         n_layer=shape.layers, n_head=shape.heads, resid_pdrop=dropout,
                         embd_pdrop=dropout, attn_pdrop=dropout, bos_token_id=eos,
                         eos_token_id=eos, pad_token_id=tokenizer.pad_token_id)
        return GPT2LMHeadModel(cfg)
    if arch == "bert":
        cfg = BertConfig(vocab_size=vocab, hidden_size=shape.hidden,
                         num_hidden_layers=shape.layers, num_attention_heads=shape.heads,
                         intermediate_size=4 * shape.hidden, max_position_embeddings=block_size,
                         hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
                         pad_token_id=tokenizer.pad_token_id)
        return BertForMaskedLM(cfg)
    raise InputError(f"unknown student architecture {arch!r} (gpt2 or bert)")


# --------------------------------------------------------------------------- data
@functools.lru_cache(maxsize=8)
def _epoch_order(n: int, seed: int) -> torch.Tensor:
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed))


def make_batch(blocks: torch.Tensor, step: int, *, batch_size: int, seed: int, phase: str,
               arch: Arch, tokenizer=None, mask_prob: float = 0.15) -> dict[str, torch.Tensor]:
    """Batch number ``step``: a pure function of (seed, phase, step).

    Order: an infinite stream of per-epoch permutations (epoch e shuffled with seed, phase, e).
    Masked LMs: ``mask_prob`` of the tokens selected (BERT: 0.15), drawn from a generator
    seeded with (seed, phase, step).
    """
    n = blocks.shape[0]
    if n == 0:
        raise InputError("training corpus gives no complete block: use more text or a smaller block_size")
    salt = PHASES[phase]
    idx = []
    for j in range(step * batch_size, (step + 1) * batch_size):
        epoch, pos = divmod(j, n)
        idx.append(int(_epoch_order(n, seed * 1_000_003 + salt * 10_007 + epoch)[pos]))
    ids = blocks[idx]
    if arch == "gpt2":
        return {"input_ids": ids, "labels": ids}
    g = torch.Generator().manual_seed(seed * 7_000_003 + salt * 1_000_033 + step)
    inputs, labels = mask_tokens(ids, mask_id=tokenizer.mask_token_id, vocab_size=len(tokenizer),
                                 special_ids=tokenizer.all_special_ids, generator=g, prob=mask_prob)
    return {"input_ids": inputs, "labels": labels}


# --------------------------------------------------------------------------- loss
def scored_positions(labels: torch.Tensor, arch: Arch) -> torch.Tensor:
    """Boolean mask of the positions whose distributions are distilled: every position
    for causal LMs (each predicts the next token), the selected positions for masked LMs."""
    return torch.ones_like(labels, dtype=torch.bool) if arch == "gpt2" else labels != -100


TAIL = -1   # index of the tail bucket in ``teacher_indices`` (the teacher's mass outside its top k)


def distillation_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, *,
                      temperature: float = 2.0, teacher_indices: torch.Tensor | None = None
                      ) -> torch.Tensor:
    """``T^2 * KL(softmax(t/T) || softmax(s/T))`` averaged over positions (Hinton et al. 2015).

    ``student_logits``: [N, V]; ``teacher_logits``: [N, V], or [N, k] top-k logits with
    their vocabulary ``teacher_indices`` [N, k]. When the last column of ``teacher_indices``
    is :data:`TAIL`, that column is the tail bucket (see :func:`teacher_targets`) and the loss
    is the exact KL over the k tokens plus the tail; otherwise the teacher is renormalised
    over its top k. k = V gives the full KL either way.
    """
    if temperature <= 0:
        raise InputError(f"distillation temperature must be positive, got {temperature}")
    T = float(temperature)
    s = student_logits.float()
    s = s / T if T != 1.0 else s
    if teacher_indices is None:
        log_q = F.log_softmax(s, dim=-1)
    else:                       # only [N, k] log-probabilities: no second [N, V] tensor is made
        idx = teacher_indices.long()
        tail = bool(idx.shape[-1]) and bool((idx[:, -1] == TAIL).all())
        top = idx[:, :-1] if tail else idx
        log_q = s.gather(-1, top) - torch.logsumexp(s, dim=-1, keepdim=True)
        if tail:                # log(1 - sum of the top-k probabilities), in float64
            rest = (1.0 - log_q.double().exp().sum(-1, keepdim=True)).clamp(min=1e-30)
            log_q = torch.cat([log_q, rest.log().float()], dim=-1)
    log_p = F.log_softmax(teacher_logits.float() / T, dim=-1)
    terms = log_p.exp() * (log_p - log_q)
    kl = torch.where(torch.isneginf(log_p), 0.0, terms).sum(-1)   # an empty bucket adds nothing
    return T * T * kl.mean()


@dataclass
class TrainConfig:
    """Hyper-parameters shared by every student (seed 000 A.5: students differ only in shape)."""

    steps: int = 100
    batch_size: int = 8
    lr: float = 1e-3
    warmup: float = 0.1            # fraction of steps with linear warm-up
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    temperature: float = 2.0
    alpha: float = 0.0             # weight of the hard LM loss during distillation
    mask_prob: float = 0.15        # masked LMs: share of tokens selected per block (BERT: 0.15)
    seed: int = 0
    checkpoint_every: int = 50
    checkpoint_seconds: float = 0.0  # and no sooner than this after the last save (or the start)


#: The clock of ``checkpoint_seconds`` (a test replaces it to decide when checkpoints are due).
checkpoint_clock = time.monotonic

TeacherFn = Callable[[int, dict], tuple[torch.Tensor, torch.Tensor | None]]


def _atomic_save(obj, path: Path) -> None:
    """``torch.save`` through :func:`helpers.tables.atomic_path`: a reader sees the old checkpoint
    or the new one, never half of one."""
    with tables.atomic_path(path) as tmp:
        torch.save(obj, tmp)


def train(model, blocks: torch.Tensor, cfg: TrainConfig, *, arch: Arch, tokenizer=None,
          phase: str = "pretrain", teacher: TeacherFn | None = None,
          checkpoint: str | Path | None = None, progress: bool = True,
          callback: Callable[[int, float], None] | None = None) -> dict:
    """Train ``model`` in place for ``cfg.steps`` steps; returns a summary dict.

    ``phase="pretrain"``/``"teacher"``/``"heal-lm"``: the LM loss. ``phase="distill"``/``"heal-kd"``:
    ``teacher(step, batch)``
    returns (logits, indices-or-None) for the batch's scored positions (see
    :func:`distillation_loss`); loss = alpha * LM + (1 - alpha) * KD.
    ``checkpoint``: file written atomically every ``cfg.checkpoint_every`` steps and at the end,
    but never sooner than ``cfg.checkpoint_seconds`` after the last write (or the start): a kill
    loses at most that much training, and short runs are not slowed by saving the optimizer's
    state every few steps; when it exists, training resumes from it (model, optimizer, scheduler,
    step, RNG).
    ``callback(step, loss)`` runs after every step (tests use it to simulate a crash).
    """
    from transformers import get_linear_schedule_with_warmup

    if phase not in PHASES:
        raise InputError(f"unknown training phase {phase!r} ({', '.join(PHASES)})")
    kd_phase = phase in KD_PHASES
    if kd_phase and teacher is None:
        raise InputError(f"phase={phase!r} needs a teacher")
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    opt = adamw(groups, lr=cfg.lr)            # the fused kernel where torch has it
    sched = get_linear_schedule_with_warmup(opt, int(cfg.warmup * cfg.steps), cfg.steps)
    step, losses, seconds = 0, [], 0.0
    ckpt = Path(checkpoint) if checkpoint else None
    if ckpt is not None:                      # temporaries of a killed run's checkpoint writes
        tables.remove_stale_temporaries(ckpt.parent)
    torch.manual_seed(cfg.seed * 31 + PHASES[phase])      # dropout RNG
    if ckpt is not None and ckpt.exists():
        state = torch.load(ckpt, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        step, losses, seconds = state["step"], state["losses"], state["seconds"]
        torch.set_rng_state(state["rng"])

    def save():
        if ckpt is not None:
            _atomic_save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                          "scheduler": sched.state_dict(), "step": step, "losses": losses,
                          "seconds": seconds, "rng": torch.get_rng_state(),
                          "config": asdict(cfg), "phase": phase}, ckpt)

    last_save = checkpoint_clock()
    model.train()
    bar = progress_bar(total=cfg.steps, initial=step, desc=phase, unit="step", enabled=progress, leave=False)
    tokens = 0
    while step < cfg.steps:
        t0 = time.perf_counter()
        batch = make_batch(blocks, step, batch_size=cfg.batch_size, seed=cfg.seed, phase=phase,
                           arch=arch, tokenizer=tokenizer, mask_prob=cfg.mask_prob)
        need_lm = not kd_phase or cfg.alpha > 0
        out = model(input_ids=batch["input_ids"], labels=batch["labels"] if need_lm else None)
        loss = out.loss if not kd_phase else 0.0
        if kd_phase:
            t_logits, t_idx = teacher(step, batch)
            # causal: every position is scored, so a view (no copy of the [B*T, V] logits)
            s_logits = (out.logits.flatten(0, 1) if arch == "gpt2"
                        else out.logits[scored_positions(batch["labels"], arch)])
            kd = distillation_loss(s_logits, t_logits, temperature=cfg.temperature, teacher_indices=t_idx)
            loss = cfg.alpha * out.loss + (1 - cfg.alpha) * kd if cfg.alpha > 0 else kd
        loss.backward()
        if cfg.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        tokens += batch["input_ids"].numel()
        seconds += time.perf_counter() - t0
        losses.append(loss.item())
        bar.update(1)
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
        if (ckpt is not None and (step % cfg.checkpoint_every == 0 or step == cfg.steps)
                and checkpoint_clock() - last_save >= cfg.checkpoint_seconds):
            save()
            last_save = checkpoint_clock()
        if callback is not None:
            callback(step, losses[-1])
    bar.close()
    model.eval()
    tail = losses[-max(1, len(losses) // 10):]
    return {"phase": phase, "steps": step, "final_loss": float(sum(tail) / len(tail)) if tail else math.nan,
            "losses": losses, "seconds": seconds, "tokens_this_run": tokens}


# --------------------------------------------------------------------------- teachers
def teacher_targets(teacher_model, *, arch: Arch, top_k: int | None = None, temperature: float | None = None,
                    cache: dict | None = None) -> TeacherFn:
    """Wrap a teacher as ``fn(step, batch) -> (logits, indices)`` for :func:`train`.

    The teacher runs in eval mode without gradients on the student's (masked) input; only the
    scored positions are kept, optionally as top-k logits. With ``top_k`` and ``temperature``
    a tail bucket is appended: logit ``T * logsumexp(t_rest / T)`` with index :data:`TAIL`, so
    that the softmax at temperature T of the k + 1 columns is exactly the teacher's
    distribution over its top k and the rest (see :func:`distillation_loss`); the targets are
    then specific to that temperature. ``cache`` (a dict keyed by step) shares the results
    across students, which see identical batches.
    """
    teacher_model.eval()

    def fn(step: int, batch: dict):
        if cache is not None and step in cache:
            return cache[step]
        with torch.no_grad():
            ids = batch["input_ids"]
            logits = teacher_model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
        logits = logits[scored_positions(batch["labels"], arch)]
        if top_k is None:
            res = (logits, None)
        else:
            vals, idx = logits.topk(top_k, dim=-1)
            if temperature is not None:
                T = float(temperature)
                rest = T * torch.logsumexp(logits.float().scatter(-1, idx, float("-inf")) / T, -1, keepdim=True)
                vals = torch.cat([vals.float(), rest], dim=-1)
                idx = torch.cat([idx, torch.full_like(idx[:, :1], TAIL)], dim=-1)
            res = (vals, idx)
        if cache is not None:
            cache[step] = res
        return res

    return fn
