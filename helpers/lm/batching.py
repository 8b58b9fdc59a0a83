"""What every language-model operation of the package shares: checked texts, batches under a
token budget, padding, the model's device, and log-probabilities read only where a token is
scored.

The scorers (:mod:`helpers.lm.scoring`), cloze scores (:mod:`helpers.lm.cloze`), fill-ins
(:mod:`helpers.lm.fill`), embeddings (:mod:`helpers.lm.embeddings`) and generation
(:mod:`helpers.lm.generation`) all batch with these functions; how a model reads text (its start
tokens, its maximum length) is decided in :mod:`helpers.lm.conventions`.

- :func:`batches`: indices sorted by length (longest first) and cut so that rows x longest row
  stays within a token budget (:data:`DEFAULT_CPU_BATCH_TOKENS` on a CPU: smaller passes stay in
  cache; :data:`DEFAULT_BATCH_TOKENS` on an accelerator), as awslabs/mlm-scoring buckets copies;
- :func:`pad`: right-padded ids and attention mask;
- :func:`verified_head`: the LM head as a function of the base model's hidden states, used only
  when it reproduces the full model's logits on a probe, so the vocabulary projection runs only
  at scored positions (:func:`token_logprobs`, in chunks of at most 32 Mi logits: a 262k-token
  vocabulary never makes a huge tensor).
"""

from __future__ import annotations

from collections.abc import Sequence

from helpers.errors import InputError

__all__ = ["check_texts", "device", "default_budget", "batches", "pad", "pad_id", "token_logprobs",
           "verified_head", "causal_head", "mlm_head", "config_get", "vocab_size",
           "DEFAULT_BATCH_TOKENS", "DEFAULT_CPU_BATCH_TOKENS"]

DEFAULT_BATCH_TOKENS = 8192     # tokens per forward pass on an accelerator
DEFAULT_CPU_BATCH_TOKENS = 1024 # on a CPU: smaller passes stay in cache (measured on 2 cores, 120
                                # ToxiGen sentences: SmolLM2 1.8x and BERT-base-shaped PLL 1.2x
                                # faster than with 8192; scores are the same)
LOGIT_FLOATS = 1 << 25          # at most 32 Mi logits (128 MB fp32) materialised at once


def check_texts(texts, what: str = "text") -> list[str]:
    """``texts`` as a list of non-empty strings; one string, a non-string or a blank row -> InputError."""
    if isinstance(texts, str):
        raise InputError(f"{what}s must be a list of strings, not one string")
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise InputError(f"{what} row {i}: not a string ({type(t).__name__})")
        if not t.strip():
            raise InputError(f"{what} row {i}: empty {what}")
    return texts


def device(model):
    """The torch device of ``model``'s parameters."""
    import torch

    dev = getattr(model, "device", None)
    if isinstance(dev, torch.device):
        return dev
    return next(model.parameters()).device


def default_budget(model) -> int:
    """Tokens per forward pass: :data:`DEFAULT_CPU_BATCH_TOKENS` on a CPU, else :data:`DEFAULT_BATCH_TOKENS`."""
    return DEFAULT_CPU_BATCH_TOKENS if device(model).type == "cpu" else DEFAULT_BATCH_TOKENS


def batches(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Indices sorted by length (longest first), cut so rows * longest <= budget (>= 1 row)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    out, cur = [], []
    for i in order:
        if cur and (len(cur) + 1) * lengths[cur[0]] > budget:
            out.append(cur)
            cur = []
        cur.append(i)
    if cur:
        out.append(cur)
    return out


def pad_id(tokenizer) -> int:
    """The id batches are padded with (never attended to): the pad token, else EOS, else UNK, else 0."""
    for t in (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id):
        if t is not None:
            return int(t)
    return 0


def pad(rows: list[list[int]], pad_with: int):
    """Right-padded LongTensor and attention mask (None when every row has the same length)."""
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_with, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for k, r in enumerate(rows):
        ids[k, :len(r)] = torch.as_tensor(r, dtype=torch.long)
        mask[k, :len(r)] = 1
    return ids, (None if bool(mask.all()) else mask)


def token_logprobs(head, hidden, targets, vocab: int):
    """log p(target) = -cross_entropy(head(hidden), target), computed in row chunks so that at
    most ``LOGIT_FLOATS`` logits exist at once."""
    import torch
    import torch.nn.functional as F

    step = max(1, LOGIT_FLOATS // max(1, vocab))
    out = [-F.cross_entropy(head(hidden[a:a + step]).float(), targets[a:a + step], reduction="none")
           for a in range(0, hidden.shape[0], step)]
    return torch.cat(out) if out else hidden.new_zeros(0)


def config_get(model, *names):
    """The first of ``names`` set in ``model.config`` or its ``text_config``, else None."""
    cfg = model.config
    for sub in (cfg, getattr(cfg, "text_config", None)):
        for n in names:
            v = getattr(sub, n, None) if sub is not None else None
            if v is not None:
                return v
    return None


def vocab_size(loaded) -> int:
    """The size of the model's output vocabulary (its config's, else the tokenizer's)."""
    return config_get(loaded.model, "vocab_size") or len(loaded.tokenizer)


def causal_head(model):
    """A causal LM's head as a function of its base model's hidden states (Gemma's final logit
    soft-capping included), or None when the model has no separable head."""
    out = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if out is None or model.base_model is model:
        return None
    cap = config_get(model, "final_logit_softcapping")
    if cap:
        import torch

        return lambda h: torch.tanh(out(h) / cap) * cap
    return out


def mlm_head(model):
    """A masked LM's head as a function of its base model's hidden states, per architecture."""
    import torch

    for attr in ("cls", "lm_head", "predictions"):          # BERT/MobileBERT, RoBERTa family, ALBERT
        if isinstance(getattr(model, attr, None), torch.nn.Module):
            return getattr(model, attr)
    if hasattr(model, "vocab_projector"):                    # DistilBERT
        return lambda h: model.vocab_projector(model.vocab_layer_norm(model.activation(model.vocab_transform(h))))
    if hasattr(model, "generator_lm_head"):                  # ELECTRA generator
        return lambda h: model.generator_lm_head(model.generator_predictions(h))
    return None


def verified_head(model, make_head, base_forward, probe_ids):
    """``make_head(model)`` if applying it to the base model's hidden states reproduces the
    full model's logits on a probe input (checked once per model object), else None."""
    import torch

    attr = "_harms_head_ok"
    head = make_head(model)
    if head is None:
        return None
    ok = getattr(model, attr, None)
    if ok is None:
        try:
            with torch.inference_mode():
                ids = torch.as_tensor([probe_ids], device=device(model))
                full = model(input_ids=ids).logits[0]
                mine = head(base_forward(ids, None)[0])
                ok = bool(full.shape == mine.shape and torch.allclose(full, mine, rtol=1e-4, atol=1e-4))
        except Exception:  # noqa: BLE001 - any failure means: use the full model instead
            ok = False
        setattr(model, attr, ok)
    return head if ok else None
