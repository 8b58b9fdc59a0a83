"""Structured pruning of a pretrained teacher into smaller students (depth, heads, MLP channels).

Two published recipes, both measured with forward passes only on a small calibration sample:

- **Depth** (ShortGPT: Men et al. 2024, "ShortGPT: Layers in Large Language Models are More
  Redundant Than You Expect", arXiv 2403.03853, eq. 1; also Minitron's "BI"): the Block
  Influence of layer i is

      BI_i = 1 - E_{X,t} [ X_{i,t}^T X_{i+1,t} / (||X_{i,t}||_2 ||X_{i+1,t}||_2) ]

  with X_i the hidden states entering layer i and X_{i+1} those leaving it; the layers with the
  lowest BI are removed (:func:`block_importance`, :func:`layers_to_keep`).
- **Width** (Minitron: Muralidharan et al. 2024, "Compact Language Models via Pruning and
  Knowledge Distillation", arXiv 2407.14679, Sec. 2.2): activation-based importance of every
  attention head, F_head^(i) = agg_{B,S} ||Attn(X W^{Q,i}, X W^{K,i}, X W^{V,i})||_2, and every
  MLP neuron, F_neuron^(i) = agg_{B,S} of its activation (:func:`activation_importance`); the
  least important heads and channels are sliced out of the weights (:func:`prune`).

Supported: Llama-like causal LMs (Llama / SmolLM2, Mistral, Qwen2/3, Gemma 3 text) and BERT
encoders (:func:`supported`). The teacher is never modified; :func:`prune` returns a new model.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from helpers.errors import InputError, first_line

_KINDS = "Llama-like causal LMs (model.model.layers[i].self_attn / .mlp: Llama, SmolLM2, Mistral, Qwen2, Gemma 3) and BERT"


def supported(model) -> str:
    """``"llama"`` or ``"bert"`` (the layout :func:`prune` knows); InputError naming the class otherwise."""
    layers = getattr(getattr(model, "model", None), "layers", None)
    if layers is not None and len(layers) and all(
            hasattr(layers[0], a) for a in ("self_attn", "mlp")) and hasattr(layers[0].mlp, "down_proj") \
            and all(hasattr(layers[0].self_attn, p) for p in ("q_proj", "k_proj", "v_proj", "o_proj")):
        return "llama"
    enc = getattr(getattr(model, "bert", model), "encoder", None)
    layers = getattr(enc, "layer", None)
    if layers is not None and len(layers) and hasattr(getattr(layers[0], "attention", None), "self") \
            and hasattr(layers[0].attention.self, "query") and hasattr(layers[0], "intermediate"):
        return "bert"
    raise InputError(f"pruning does not support {type(model).__name__}: supported are {_KINDS}")


def _config(model_or_config):
    cfg = getattr(model_or_config, "config", model_or_config)
    return getattr(cfg, "text_config", None) or cfg


def _base(model, kind: str):
    return model.model if kind == "llama" else getattr(model, "bert", model)


def _layers(model, kind: str) -> torch.nn.ModuleList:
    return _base(model, kind).layers if kind == "llama" else _base(model, kind).encoder.layer


def _head_dim(cfg) -> int:
    return getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads


def _kv_heads(cfg) -> int:
    return getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads


def _check_calibration(calibration) -> None:
    if not isinstance(calibration, torch.Tensor) or calibration.dim() != 2 or calibration.numel() == 0:
        shape = tuple(calibration.shape) if isinstance(calibration, torch.Tensor) else type(calibration).__name__
        raise InputError(f"calibration must be a non-empty (blocks, tokens) tensor of token ids, got {shape}")


@torch.no_grad()
def _run(model, kind: str, calibration: torch.Tensor, batch_size: int) -> None:
    """Forward passes of the base model (no LM head) over ``calibration``, every position real."""
    _check_calibration(calibration)
    base, training = _base(model, kind), model.training
    device = next(model.parameters()).device
    model.eval()
    try:
        for start in range(0, calibration.shape[0], batch_size):
            ids = calibration[start:start + batch_size].to(device)
            extra = {"use_cache": False} if kind == "llama" else {}
            base(input_ids=ids, attention_mask=torch.ones_like(ids), **extra)
    finally:
        model.train(training)


def _hooked(model, kind, calibration, batch_size, hooks) -> None:
    """Run :func:`_run` with ``hooks`` = [(module, "pre" | "post", fn)] registered, then remove them."""
    handles = []
    try:
        for module, when, fn in hooks:
            if when == "pre":
                handles.append(module.register_forward_pre_hook(fn, with_kwargs=True))
            else:
                handles.append(module.register_forward_hook(fn))
        _run(model, kind, calibration, batch_size)
    finally:
        for h in handles:
            h.remove()


def block_importance(model, calibration: torch.Tensor, *, batch_size: int = 8) -> np.ndarray:
    """ShortGPT's Block Influence of every layer (Men et al. 2024, eq. 1): ``BI_i = 1 - mean over
    all calibration tokens of cos(h_i, h_{i+1})``, h_i entering layer i and h_{i+1} leaving it.

    The two states are taken by hooks on the layer itself rather than from
    ``output_hidden_states``: transformers replaces the last entry of that tuple by the output of
    the final norm, which would give the last layer a BI it does not have. Every token position
    counts (attention mask of ones). Returns a float64 array of length ``num_hidden_layers``.
    """
    kind = supported(model)
    layers = _layers(model, kind)
    sums, counts, inputs = np.zeros(len(layers)), np.zeros(len(layers)), {}

    def pre(i):
        def fn(module, args, kwargs):
            inputs[i] = args[0] if args else kwargs["hidden_states"]
        return fn

    def post(i):
        def fn(module, args, output):
            out = output[0] if isinstance(output, tuple) else output
            cos = torch.nn.functional.cosine_similarity(inputs.pop(i).double(), out.double(), dim=-1)
            sums[i] += cos.sum().item()
            counts[i] += cos.numel()
        return fn

    hooks = [(layer, "pre", pre(i)) for i, layer in enumerate(layers)]
    hooks += [(layer, "post", post(i)) for i, layer in enumerate(layers)]
    _hooked(model, kind, calibration, batch_size, hooks)
    return 1.0 - sums / counts


def _width_modules(layer, kind: str):
    """(the module whose input is the attention output of all heads, the one whose input is the
    MLP's hidden activation)."""
    if kind == "llama":
        return layer.self_attn.o_proj, layer.mlp.down_proj
    return layer.attention.output.dense, layer.output.dense


def activation_importance(model, calibration: torch.Tensor, *, batch_size: int = 8) -> dict:
    """Minitron's activation-based importance (Muralidharan et al. 2024, Sec. 2.2), per layer:

    - ``"mlp"``: channel c = mean over all calibration tokens of |a_c|, a = the input of
      ``down_proj`` (llama: act(gate) * up) or of ``output.dense`` (bert: GELU(intermediate)), i.e.
      F_neuron with the activation after the nonlinearity, which is what is removed;
    - ``"heads"``: head h = mean over all tokens of ||o_h||_2, o_h = that head's ``head_dim`` slice
      of the attention output (the input of ``o_proj`` / ``attention.output.dense``), i.e. F_head.

    Aggregation: the mean over every (block, position) token. Minitron's Table 13 found the
    aggregation (batch: L2 norm, sequence: mean) slightly better; with calibration blocks of
    equal length both rank by the size of the activation and differ only in how outlier blocks
    weigh. Lists are indexed by the ORIGINAL layer index; tensors are float64 on the CPU.
    """
    kind = supported(model)
    cfg, layers = _config(model), _layers(model, kind)
    head_dim = _head_dim(cfg) if kind == "llama" else layers[0].attention.self.attention_head_size
    mlp = [None] * len(layers)
    heads = [None] * len(layers)
    tokens = [0] * len(layers)

    def accumulate(store, i, value):
        store[i] = value if store[i] is None else store[i] + value

    def attn_hook(i):
        def fn(module, args, kwargs):
            x = (args[0] if args else kwargs["input"]).detach().double()
            norms = x.reshape(*x.shape[:-1], -1, head_dim).norm(dim=-1)
            accumulate(heads, i, norms.reshape(-1, norms.shape[-1]).sum(0).cpu())
        return fn

    def mlp_hook(i):
        def fn(module, args, kwargs):
            x = (args[0] if args else kwargs["input"]).detach().double()
            accumulate(mlp, i, x.abs().reshape(-1, x.shape[-1]).sum(0).cpu())
            tokens[i] += x.shape[:-1].numel()
        return fn

    hooks = []
    for i, layer in enumerate(layers):
        attn_in, mlp_in = _width_modules(layer, kind)
        hooks += [(attn_in, "pre", attn_hook(i)), (mlp_in, "pre", mlp_hook(i))]
    _hooked(model, kind, calibration, batch_size, hooks)
    return {"mlp": [m / n for m, n in zip(mlp, tokens)], "heads": [h / n for h, n in zip(heads, tokens)]}


def layers_to_keep(importance, n_layers: int) -> list[int]:
    """The ``n_layers`` layers with the highest block importance, in their original order
    (ShortGPT removes the lowest-BI layers; ties keep the earlier layer)."""
    bi = np.asarray(importance, dtype=float)
    if not 1 <= n_layers <= len(bi):
        raise InputError(f"cannot keep {n_layers} layers: the teacher has {len(bi)} (keep 1 to {len(bi)})")
    return sorted(int(i) for i in np.argsort(-bi, kind="stable")[:n_layers])


def check_shape(config, *, layers: int | None = None, heads: int | None = None,
                intermediate: int | None = None) -> None:
    """One-line InputError for a student shape the teacher cannot give: more (or fewer than 1)
    layers, heads or MLP channels than the teacher's, or (grouped-query attention) a head count
    that does not split evenly over the teacher's key-value heads."""
    cfg = _config(config)
    teacher = {"layers": cfg.num_hidden_layers, "heads": cfg.num_attention_heads,
               "intermediate": cfg.intermediate_size}
    for name, value in (("layers", layers), ("heads", heads), ("intermediate", intermediate)):
        if value is None:
            continue
        what = {"layers": "layers", "heads": "attention heads", "intermediate": "MLP channels"}[name]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= teacher[name]:
            raise InputError(f"{name} {value!r}: the teacher has {teacher[name]} {what} "
                             f"(a student keeps 1 to {teacher[name]})")
    kv = _kv_heads(cfg)
    if heads is not None and kv != cfg.num_attention_heads and heads % kv:
        raise InputError(f"heads {heads} is not a multiple of the teacher's {kv} key-value heads "
                         f"(grouped-query attention keeps the same number of query heads in every group)")
    if heads is not None and heads != cfg.num_attention_heads and hasattr(cfg, "num_key_value_heads"):
        _check_config_accepts(cfg, heads)


def _check_config_accepts(cfg, heads: int) -> None:
    """The student's config must load again: e.g. transformers 5's LlamaConfig and Gemma3 config
    require ``hidden_size % num_attention_heads == 0`` even when ``head_dim`` is explicit."""
    d = cfg.to_dict()
    d.update(num_attention_heads=heads, head_dim=_head_dim(cfg))
    if _kv_heads(cfg) == cfg.num_attention_heads:
        d["num_key_value_heads"] = heads
    try:
        type(cfg).from_dict(d)
    except Exception as e:  # the config class's own validation (a ValueError inside a strict-dataclass error)
        cause = first_line(e.__cause__ or e)
        raise InputError(f"heads {heads}: {type(cfg).__name__} rejects it ({cause})") from None


def _slice_linear(linear: torch.nn.Linear, index: torch.Tensor, dim: int) -> None:
    """Keep rows (``dim=0``: output features, and the bias) or columns (``dim=1``) ``index``."""
    index = index.to(linear.weight.device)
    linear.weight = torch.nn.Parameter(linear.weight.data.index_select(dim, index).clone())
    if dim == 0:
        if linear.bias is not None:
            linear.bias = torch.nn.Parameter(linear.bias.data.index_select(0, index).clone())
        linear.out_features = len(index)
    else:
        linear.in_features = len(index)


def _top(scores: torch.Tensor, k: int) -> torch.Tensor:
    """Indices of the ``k`` largest scores, ascending (ties keep the earlier index)."""
    order = np.argsort(-scores.detach().cpu().double().numpy(), kind="stable")[:k]
    return torch.as_tensor(sorted(order.tolist()), dtype=torch.long)


def _rows(heads: torch.Tensor, head_dim: int) -> torch.Tensor:
    return (heads[:, None] * head_dim + torch.arange(head_dim)).reshape(-1)


def _choose_heads(scores: torch.Tensor, n_heads: int, n_kv: int, keep: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(query heads kept, key-value heads kept or None when they all stay). Grouped-query
    attention: every key-value group keeps ``keep // n_kv`` query heads, its most important ones.
    Multi-head attention (n_kv == n_heads): the ``keep`` most important heads with their keys
    and values."""
    if n_kv == n_heads:
        chosen = _top(scores, keep)
        return chosen, chosen
    group = n_heads // n_kv
    chosen = [g * group + _top(scores[g * group:(g + 1) * group], keep // n_kv) for g in range(n_kv)]
    return torch.cat(chosen), None


def _prune_heads(layer, kind: str, scores: torch.Tensor, keep: int, cfg) -> None:
    if kind == "llama":
        attn, head_dim, n_kv = layer.self_attn, _head_dim(cfg), _kv_heads(cfg)
        q_heads, kv_heads = _choose_heads(scores, cfg.num_attention_heads, n_kv, keep)
        _slice_linear(attn.q_proj, _rows(q_heads, head_dim), 0)
        _slice_linear(attn.o_proj, _rows(q_heads, head_dim), 1)
        if kv_heads is not None:
            for proj in (attn.k_proj, attn.v_proj):
                _slice_linear(proj, _rows(kv_heads, head_dim), 0)
        attn.num_key_value_groups = keep // (len(kv_heads) if kv_heads is not None else n_kv)
        return
    attn = layer.attention.self
    rows = _rows(_top(scores, keep), attn.attention_head_size)
    for proj in (attn.query, attn.key, attn.value):
        _slice_linear(proj, rows, 0)
    _slice_linear(layer.attention.output.dense, rows, 1)
    attn.num_attention_heads, attn.all_head_size = keep, keep * attn.attention_head_size


def _prune_mlp(layer, kind: str, scores: torch.Tensor, keep: int) -> None:
    channels = _top(scores, keep)
    ups = (layer.mlp.gate_proj, layer.mlp.up_proj) if kind == "llama" else (layer.intermediate.dense,)
    for proj in ups:
        _slice_linear(proj, channels, 0)
    _slice_linear(_width_modules(layer, kind)[1], channels, 1)


def _checked_keep(keep_layers, n: int) -> list[int]:
    keep = [int(i) for i in keep_layers]
    if not keep or len(set(keep)) != len(keep) or not all(0 <= i < n for i in keep):
        raise InputError(f"keep_layers {list(keep_layers)!r}: expected distinct layer indices in 0..{n - 1} "
                         f"(the teacher has {n} layers)")
    return sorted(keep)


def prune(model, *, keep_layers: list[int] | None = None, heads: int | None = None,
          intermediate: int | None = None, importance: dict | None = None):
    """A NEW model (the teacher is deep-copied, never modified) with only ``keep_layers`` (original
    indices, kept in order), ``heads`` attention heads and ``intermediate`` MLP channels per
    layer, the most important ones by ``importance`` (:func:`activation_importance` of this
    model, indexed by original layer) -- Minitron's width pruning (Sec. 2.3, without its
    head-residual merging) and ShortGPT's layer removal.

    The config follows (``num_hidden_layers``, ``layer_types``, ``num_attention_heads``,
    ``head_dim`` made explicit, ``num_key_value_heads`` -- unchanged under grouped-query
    attention --, ``intermediate_size``) and attention ``layer_idx`` is renumbered, so a llama
    student round-trips through ``save_pretrained`` / ``from_pretrained``. BERT derives its head
    size from ``hidden_size / num_attention_heads``, so a BERT with pruned heads keeps the
    teacher's ``num_attention_heads`` in its config and cannot be reloaded from it; its layers
    and MLP channels can.
    """
    kind = supported(model)
    cfg0 = _config(model)
    if (heads is not None or intermediate is not None) and importance is None:
        raise InputError("pruning heads or MLP channels needs `importance` "
                         "(activation_importance of the same teacher on a calibration sample)")
    n = len(_layers(model, kind))
    keep = list(range(n)) if keep_layers is None else _checked_keep(keep_layers, n)
    check_shape(cfg0, layers=len(keep), heads=heads, intermediate=intermediate)
    if importance is not None and (len(importance.get("heads", [])) != n or len(importance.get("mlp", [])) != n):
        raise InputError(f"importance has {len(importance.get('heads', []))} head and "
                         f"{len(importance.get('mlp', []))} MLP entries; the teacher has {n} layers")
    student = copy.deepcopy(model)
    cfg, layers = _config(student), _layers(student, kind)
    kept = torch.nn.ModuleList([layers[i] for i in keep])
    for new_index, (old_index, layer) in enumerate(zip(keep, kept)):
        if heads is not None and heads != cfg0.num_attention_heads:
            _prune_heads(layer, kind, importance["heads"][old_index], heads, cfg0)
        if intermediate is not None and intermediate != cfg0.intermediate_size:
            _prune_mlp(layer, kind, importance["mlp"][old_index], intermediate)
        attn = layer.self_attn if kind == "llama" else layer.attention.self
        if hasattr(attn, "layer_idx"):
            attn.layer_idx = new_index
    if kind == "llama":
        student.model.layers = kept
        if heads is not None and heads != cfg0.num_attention_heads:
            if _kv_heads(cfg0) == cfg0.num_attention_heads:
                cfg.num_key_value_heads = heads
            cfg.head_dim, cfg.num_attention_heads = _head_dim(cfg0), heads
    else:
        _base(student, kind).encoder.layer = kept
    cfg.num_hidden_layers = len(keep)
    if getattr(cfg, "layer_types", None) is not None:
        cfg.layer_types = [cfg0.layer_types[i] for i in keep]
    if intermediate is not None:
        cfg.intermediate_size = intermediate
    return student


def _shape(model, kind: str) -> dict:
    layer = _layers(model, kind)[0]
    if kind == "llama":
        cfg = _config(model)
        return {"heads": layer.self_attn.q_proj.out_features // _head_dim(cfg),
                "kv_heads": layer.self_attn.k_proj.out_features // _head_dim(cfg),
                "intermediate": layer.mlp.down_proj.in_features}
    attn = layer.attention.self
    return {"heads": attn.num_attention_heads, "kv_heads": attn.num_attention_heads,
            "intermediate": layer.output.dense.in_features}


def describe_pruning(teacher, student, *, keep_layers: list[int] | None = None) -> dict:
    """What pruning kept, for the zoo manifest: layers (and which), heads, key-value heads and MLP
    channels per layer, and the parameter counts of teacher and student (tied weights once)."""
    kind = supported(student)
    out = {"layers": len(_layers(student, kind)), "teacher_layers": len(_layers(teacher, kind)),
           "kept_layers": None if keep_layers is None else sorted(int(i) for i in keep_layers)}
    out.update(_shape(student, kind))
    out.update({f"teacher_{k}": v for k, v in _shape(teacher, kind).items()})
    out["parameters"] = sum(p.numel() for p in student.parameters())
    out["teacher_parameters"] = sum(p.numel() for p in teacher.parameters())
    return out


def hidden_importance(model, calibration: torch.Tensor, *, batch_size: int = 8) -> dict:
    """Importance of a BERT encoder's residual channels and of every attention head's dimensions
    (Minitron's embedding-channel pruning, Muralidharan et al. 2024 Sec. 2.2, carried to the head
    dimension), from forward passes over ``calibration``:

    - ``"hidden"``: channel c = sum over every LayerNorm of the residual stream (embeddings and
      both of each layer) of the mean |LN(X)_c| over tokens;
    - ``"qk"`` per layer ``[heads, head_dim]``: mean |q_d| x mean |k_d| (a dimension's share of the
      attention scores q.k);
    - ``"v"`` per layer ``[heads, head_dim]``: mean |o_d|, o the attention output of the head
      (the input of ``attention.output.dense``).
    """
    if supported(model) != "bert":
        raise InputError(f"hidden-width pruning supports BERT encoders, not {type(model).__name__}")
    base, layers = _base(model, "bert"), _layers(model, "bert")
    heads = _config(model).num_attention_heads
    sums: dict = {}

    def add(key, value):
        sums[key] = value if key not in sums else sums[key] + value

    def post(key):
        def fn(module, args, output):
            x = output.detach().double().abs()
            add(key, x.reshape(-1, x.shape[-1]).sum(0).cpu())
            if key == ("ln", "emb"):
                add("tokens", x.shape[:-1].numel())
        return fn

    def pre(key):
        def fn(module, args, kwargs):
            x = (args[0] if args else kwargs["input"]).detach().double().abs()
            add(key, x.reshape(-1, x.shape[-1]).sum(0).cpu())
        return fn

    hooks = [(base.embeddings.LayerNorm, "post", post(("ln", "emb")))]
    for i, layer in enumerate(layers):
        hooks += [(layer.attention.output.LayerNorm, "post", post(("ln", i, "a"))),
                  (layer.output.LayerNorm, "post", post(("ln", i, "o"))),
                  (layer.attention.self.query, "post", post(("q", i))), (layer.attention.self.key, "post", post(("k", i))),
                  (layer.attention.output.dense, "pre", pre(("v", i)))]
    _hooked(model, "bert", calibration, batch_size, hooks)
    n = sums.pop("tokens")

    def per_head(t):
        return t.reshape(heads, -1)

    hidden = sum(v / n for k, v in sums.items() if k[0] == "ln")
    return {"hidden": hidden,
            "qk": [per_head(sums[("q", i)] / n) * per_head(sums[("k", i)] / n) for i in range(len(layers))],
            "v": [per_head(sums[("v", i)] / n) for i in range(len(layers))]}


def _slice_norm(norm: torch.nn.LayerNorm, index: torch.Tensor) -> None:
    norm.weight = torch.nn.Parameter(norm.weight.data.index_select(0, index).clone())
    norm.bias = torch.nn.Parameter(norm.bias.data.index_select(0, index).clone())
    norm.normalized_shape = (len(index),)


def prune_hidden(model, importance: dict, hidden: int):
    """A NEW BERT model (the teacher is deep-copied) whose residual width is ``hidden``: the most
    important residual channels (``importance["hidden"]``, :func:`hidden_importance`) kept in
    every embedding, LayerNorm and projection, and every head keeping its ``hidden / heads`` most
    important query/key dimensions (``"qk"``) and value dimensions (``"v"``), so the config
    (``hidden_size``; BERT derives the head size from it) reloads. The kept indices are in
    ``model.config.pruned_hidden`` for the record. LayerNorms then normalise over fewer channels:
    the student must be healed (TinyBERT's distillation does)."""
    cfg0 = _config(model)
    if supported(model) != "bert":
        raise InputError(f"hidden-width pruning supports BERT encoders, not {type(model).__name__}")
    heads = cfg0.num_attention_heads
    if isinstance(hidden, bool) or not isinstance(hidden, (int, np.integer)) or not heads <= hidden <= cfg0.hidden_size \
            or hidden % heads:
        raise InputError(f"hidden {hidden!r}: needs a multiple of the {heads} heads, at most the teacher's "
                         f"{cfg0.hidden_size}")
    keep = _top(importance["hidden"], hidden)
    per_head, head_dim = hidden // heads, cfg0.hidden_size // heads
    student = copy.deepcopy(model)
    base = _base(student, "bert")
    emb = base.embeddings
    for table in (emb.word_embeddings, emb.position_embeddings, emb.token_type_embeddings):
        table.weight = torch.nn.Parameter(table.weight.data[:, keep].clone())
        table.embedding_dim = hidden
    _slice_norm(emb.LayerNorm, keep)
    for i, layer in enumerate(_layers(student, "bert")):
        attn = layer.attention.self
        qk = torch.cat([h * head_dim + _top(importance["qk"][i][h], per_head) for h in range(heads)])
        v = torch.cat([h * head_dim + _top(importance["v"][i][h], per_head) for h in range(heads)])
        for proj, rows in ((attn.query, qk), (attn.key, qk), (attn.value, v)):
            _slice_linear(proj, rows, 0)
            _slice_linear(proj, keep, 1)
        attn.attention_head_size, attn.all_head_size = per_head, hidden
        if hasattr(attn, "scaling"):
            attn.scaling = per_head ** -0.5
        _slice_linear(layer.attention.output.dense, v, 1)
        _slice_linear(layer.attention.output.dense, keep, 0)
        _slice_norm(layer.attention.output.LayerNorm, keep)
        _slice_linear(layer.intermediate.dense, keep, 1)
        _slice_linear(layer.output.dense, keep, 0)
        _slice_norm(layer.output.LayerNorm, keep)
    if getattr(base, "pooler", None) is not None:
        _slice_linear(base.pooler.dense, keep, 0)
        _slice_linear(base.pooler.dense, keep, 1)
    head = getattr(student, "classifier", None)
    if isinstance(head, torch.nn.Linear):
        _slice_linear(head, keep, 1)
    elif head is not None or hasattr(student, "cls"):
        raise InputError(f"{type(student).__name__}: prune_hidden slices encoders and sequence classifiers only")
    cfg = _config(student)
    cfg.hidden_size = hidden
    cfg.pruned_hidden = keep.tolist()
    return student
