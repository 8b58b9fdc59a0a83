"""helpers.training.prune on tiny random models, each result checked against an independent
computation: the teacher with the removed parts switched off by hooks, and brute-force loops."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
import torch

from helpers.errors import InputError
from helpers.training import prune


def _llama(seed: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=128, hidden_size=24, num_hidden_layers=4, num_attention_heads=6,
                      num_key_value_heads=2, head_dim=8, intermediate_size=64, max_position_embeddings=64,
                      initializer_range=0.2, attn_implementation="eager")
    return LlamaForCausalLM(cfg).eval()


def _bert(seed: int = 0):
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                     intermediate_size=48, max_position_embeddings=64, initializer_range=0.2,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attn_implementation="eager")
    return BertForMaskedLM(cfg).eval()


def _gemma3(seed: int = 0):
    """Gemma 3 text: sliding-window and full-attention layers (config.layer_types) alternate."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(seed)
    cfg = Gemma3TextConfig(vocab_size=128, hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                           num_key_value_heads=2, head_dim=8, intermediate_size=64, sliding_window=4,
                           layer_types=["sliding_attention", "full_attention"] * 2, max_position_embeddings=64,
                           initializer_range=0.2, attn_implementation="eager")
    return Gemma3ForCausalLM(cfg).eval()


MODELS = {"llama": _llama, "bert": _bert, "gemma3": _gemma3}


def _teacher(kind: str):
    """(a tiny teacher, calibration ids, its activation importance on them)."""
    teacher = MODELS[kind]()
    ids = _ids()
    return teacher, ids, prune.activation_importance(teacher, ids)


def _ids(n: int = 3, length: int = 12, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, 128, (n, length), generator=torch.Generator().manual_seed(seed))


@torch.no_grad()
def _logits(model, ids, hooks=()):
    """Logits of ``model`` with ``hooks`` = [(module, kind, fn)] registered for this call only."""
    with contextlib.ExitStack() as stack:
        for module, kind, fn in hooks:
            h = (module.register_forward_pre_hook(fn) if kind == "pre"
                 else module.register_forward_hook(fn, with_kwargs=True))
            stack.callback(h.remove)
        return model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits


def _layers(model):
    return model.model.layers if hasattr(model, "model") else model.bert.encoder.layer


def _attn_in(layer):
    return layer.self_attn.o_proj if hasattr(layer, "self_attn") else layer.attention.output.dense


def _mlp_in(layer):
    return layer.mlp.down_proj if hasattr(layer, "mlp") else layer.output.dense


def _zero_columns(keep: torch.Tensor):
    """A pre-hook on a linear layer that zeroes every input feature not in ``keep``."""
    def fn(module, args):
        mask = torch.zeros(args[0].shape[-1])
        mask[keep] = 1.0
        return (args[0] * mask,)
    return fn


def _identity(module, args, kwargs, output):
    """A forward hook making a transformer layer return the hidden states it received."""
    x = args[0] if args else kwargs["hidden_states"]
    return (x,) + tuple(output[1:]) if isinstance(output, tuple) else x


@pytest.mark.parametrize("kind", ["llama", "bert"])
def test_prune_keeping_everything_gives_the_teachers_logits(kind):
    teacher, ids, imp = _teacher(kind)
    cfg = teacher.config
    student = prune.prune(teacher, keep_layers=list(range(cfg.num_hidden_layers)), heads=cfg.num_attention_heads,
                          intermediate=cfg.intermediate_size, importance=imp)
    assert student is not teacher
    torch.testing.assert_close(_logits(student, ids), _logits(teacher, ids), atol=1e-5, rtol=0)


@pytest.mark.parametrize("kind", ["llama", "bert", "gemma3"])
def test_removing_a_layer_equals_the_teacher_with_that_layer_as_identity(kind):
    teacher = MODELS[kind]()
    ids = _ids()
    before = {k: v.clone() for k, v in teacher.state_dict().items()}
    n = teacher.config.num_hidden_layers
    for j in range(n):
        keep = [i for i in range(n) if i != j]
        student = prune.prune(teacher, keep_layers=keep)
        assert student.config.num_hidden_layers == n - 1 and len(_layers(student)) == n - 1
        expected = _logits(teacher, ids, [(_layers(teacher)[j], "post", _identity)])
        torch.testing.assert_close(_logits(student, ids), expected, atol=1e-5, rtol=0)
        assert not torch.allclose(expected, _logits(teacher, ids), atol=1e-3)   # the layer did matter
    for k, v in teacher.state_dict().items():                                     # teacher untouched
        assert torch.equal(v, before[k]), k
    assert len(_layers(teacher)) == n


def test_layer_removal_renumbers_attention_and_layer_types():
    teacher = _llama()
    teacher.config.layer_types = ["full_attention", "sliding_attention", "full_attention", "sliding_attention"]
    student = prune.prune(teacher, keep_layers=[3, 0])
    assert [layer.self_attn.layer_idx for layer in student.model.layers] == [0, 1]
    assert student.config.layer_types == ["full_attention", "sliding_attention"]
    assert teacher.config.num_hidden_layers == 4 and len(teacher.config.layer_types) == 4


@pytest.mark.parametrize("kind", ["llama", "bert"])
def test_mlp_pruning_equals_the_teacher_with_those_channels_zeroed(kind):
    teacher, ids, imp = _teacher(kind)
    k = teacher.config.intermediate_size // 2
    student = prune.prune(teacher, intermediate=k, importance=imp)
    hooks = []
    for i, layer in enumerate(_layers(teacher)):
        kept = torch.tensor(sorted(np.argsort(-imp["mlp"][i].numpy())[:k].tolist()))
        hooks.append((_mlp_in(layer), "pre", _zero_columns(kept)))
    torch.testing.assert_close(_logits(student, ids), _logits(teacher, ids, hooks), atol=1e-5, rtol=0)
    assert student.config.intermediate_size == k
    assert all(_mlp_in(layer).in_features == k for layer in _layers(student))


def _kept_heads(scores: torch.Tensor, n_heads: int, n_kv: int, keep: int) -> list[int]:
    """Independent choice: within each key-value group the ``keep // n_kv`` highest-scoring heads."""
    group = n_heads // n_kv
    out = []
    for g in range(n_kv):
        members = list(range(g * group, (g + 1) * group))
        out += sorted(sorted(members, key=lambda h: -float(scores[h]))[: keep // n_kv])
    return out


@pytest.mark.parametrize("kind", ["llama", "bert"])
def test_head_pruning_equals_the_teacher_with_those_heads_zeroed(kind):
    teacher, ids, imp = _teacher(kind)
    cfg = teacher.config
    n_heads = cfg.num_attention_heads
    n_kv = getattr(cfg, "num_key_value_heads", None) or n_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // n_heads
    keep = 4 if kind == "llama" else 2
    student = prune.prune(teacher, heads=keep, importance=imp)
    hooks = []
    for i, layer in enumerate(_layers(teacher)):
        heads = _kept_heads(imp["heads"][i], n_heads, n_kv if n_kv != n_heads else 1, keep)
        cols = torch.tensor([h * head_dim + d for h in heads for d in range(head_dim)])
        hooks.append((_attn_in(layer), "pre", _zero_columns(cols)))
    torch.testing.assert_close(_logits(student, ids), _logits(teacher, ids, hooks), atol=1e-5, rtol=0)


def test_gqa_keeps_equal_heads_per_group_and_round_trips(tmp_path):
    from transformers import AutoModelForCausalLM

    teacher = _llama()
    ids = _ids()
    imp = prune.activation_importance(teacher, ids)
    student = prune.prune(teacher, keep_layers=[0, 2, 3], heads=4, intermediate=40, importance=imp)
    head_dim, group = 8, 3
    for new, old in zip(student.model.layers, [0, 2, 3]):
        q_s = new.self_attn.q_proj.weight.view(-1, head_dim, 24)
        q_t = _layers(teacher)[old].self_attn.q_proj.weight.view(-1, head_dim, 24)
        found = [next(h for h in range(6) if torch.equal(q_s[j], q_t[h])) for j in range(q_s.shape[0])]
        assert sorted(h // group for h in found) == [0, 0, 1, 1]       # two query heads in each KV group
        assert found == _kept_heads(imp["heads"][old], 6, 2, 4)
        assert torch.equal(new.self_attn.k_proj.weight, _layers(teacher)[old].self_attn.k_proj.weight)
        assert new.self_attn.num_key_value_groups == 2
    cfg = student.config
    assert (cfg.num_hidden_layers, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim,
            cfg.intermediate_size) == (3, 4, 2, 8, 40)
    student.save_pretrained(tmp_path)
    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path, attn_implementation="eager").eval()
    torch.testing.assert_close(_logits(reloaded, ids), _logits(student, ids), atol=0, rtol=0)
    info = prune.describe_pruning(teacher, student, keep_layers=[0, 2, 3])
    assert (info["layers"], info["heads"], info["kv_heads"], info["intermediate"]) == (3, 4, 2, 40)
    assert info["kept_layers"] == [0, 2, 3] and info["teacher_heads"] == 6
    assert info["parameters"] == sum(p.numel() for p in student.parameters()) < info["teacher_parameters"]


def test_multi_head_llama_prunes_keys_and_values_with_their_queries(tmp_path):
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    teacher = LlamaForCausalLM(LlamaConfig(vocab_size=128, hidden_size=24, num_hidden_layers=2,
                                           num_attention_heads=4, num_key_value_heads=4, intermediate_size=64,
                                           initializer_range=0.2, attn_implementation="eager")).eval()
    ids = _ids()
    imp = prune.activation_importance(teacher, ids)
    student = prune.prune(teacher, heads=3, importance=imp)
    hooks = []
    for i, layer in enumerate(teacher.model.layers):
        heads = sorted(np.argsort(-imp["heads"][i].numpy())[:3].tolist())
        hooks.append((layer.self_attn.o_proj, "pre", _zero_columns(torch.tensor(
            [h * 6 + d for h in heads for d in range(6)]))))
    torch.testing.assert_close(_logits(student, ids), _logits(teacher, ids, hooks), atol=1e-5, rtol=0)
    assert student.config.num_key_value_heads == 3
    student.save_pretrained(tmp_path)
    reloaded = AutoModelForCausalLM.from_pretrained(tmp_path, attn_implementation="eager").eval()
    torch.testing.assert_close(_logits(reloaded, ids), _logits(student, ids), atol=0, rtol=0)


@torch.no_grad()
def _brute_force_bi(model, ids) -> np.ndarray:
    """1 - mean cos over tokens, token by token in numpy; the last layer's output taken before
    the final norm (output_hidden_states ends with the normed state)."""
    pre_norm = {}
    h = model.model.norm.register_forward_pre_hook(lambda m, a: pre_norm.update(x=a[0]))
    try:
        hs = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True).hidden_states
    finally:
        h.remove()
    states = [s.numpy().astype(np.float64) for s in hs[:-1]] + [pre_norm["x"].numpy().astype(np.float64)]
    out = []
    for i in range(len(states) - 1):
        a, b = states[i].reshape(-1, states[i].shape[-1]), states[i + 1].reshape(-1, states[i].shape[-1])
        cos = [float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y))) for x, y in zip(a, b)]
        out.append(1.0 - sum(cos) / len(cos))
    return np.array(out)


def test_block_importance_matches_brute_force_and_is_zero_for_identity_layers():
    model = _llama()
    ids = _ids(n=5)
    bi = prune.block_importance(model, ids, batch_size=2)
    np.testing.assert_allclose(bi, _brute_force_bi(model, ids), atol=1e-10)
    assert bi.shape == (4,) and (bi > 1e-3).all()
    with torch.no_grad():
        for j in (1, 3):                                    # layer 3 is the last: no final-norm artefact
            model.model.layers[j].self_attn.o_proj.weight.zero_()
            model.model.layers[j].mlp.down_proj.weight.zero_()
    bi = prune.block_importance(model, ids)
    assert abs(bi[1]) < 1e-6 and abs(bi[3]) < 1e-6 and bi[0] > 1e-3 and bi[2] > 1e-3
    assert prune.layers_to_keep(bi, 2) == [0, 2]
    assert prune.layers_to_keep([0.3, 0.1, 0.5, 0.2], 3) == [0, 2, 3]


def test_block_importance_bert_identity_layer():
    model = _bert()
    with torch.no_grad():
        layer = model.bert.encoder.layer[1]
        for lin in (layer.attention.output.dense, layer.output.dense):
            lin.weight.zero_()
            lin.bias.zero_()
        layer.attention.output.LayerNorm.weight.fill_(1.0)   # a LayerNorm of an already normalised state
        layer.output.LayerNorm.weight.fill_(1.0)
        layer.attention.output.LayerNorm.bias.zero_()
        layer.output.LayerNorm.bias.zero_()
        model.bert.embeddings.LayerNorm.weight.fill_(1.0)
        model.bert.embeddings.LayerNorm.bias.zero_()
        model.bert.encoder.layer[0].output.LayerNorm.weight.fill_(1.0)
        model.bert.encoder.layer[0].output.LayerNorm.bias.zero_()
    bi = prune.block_importance(model, _ids())
    assert abs(bi[1]) < 1e-6 and bi[0] > 1e-3 and bi[2] > 1e-3


@torch.no_grad()
def test_activation_importance_matches_brute_force_for_one_layer():
    model = _llama()
    ids = _ids(n=4)
    imp = prune.activation_importance(model, ids, batch_size=3)
    layer, captured = model.model.layers[2], {}
    hooks = [layer.self_attn.register_forward_pre_hook(
                 lambda m, a, k: captured.update(attn=k["hidden_states"]), with_kwargs=True),
             layer.mlp.register_forward_pre_hook(lambda m, a: captured.update(mlp=a[0]))]
    try:
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True)
    finally:
        for h in hooks:
            h.remove()
    probs = out.attentions[2].numpy().astype(np.float64)                     # (batch, heads, t, s)
    v = layer.self_attn.v_proj(captured["attn"]).numpy().astype(np.float64)  # (batch, s, kv * 8)
    x = captured["mlp"]
    act = (torch.nn.functional.silu(layer.mlp.gate_proj(x)) * layer.mlp.up_proj(x)).numpy().astype(np.float64)
    heads, mlp, n = np.zeros(6), np.zeros(64), 0
    for b in range(ids.shape[0]):
        for t in range(ids.shape[1]):
            n += 1
            mlp += np.abs(act[b, t])
            for h in range(6):
                g = h // 3
                o = sum(probs[b, h, t, s] * v[b, s, g * 8:(g + 1) * 8] for s in range(ids.shape[1]))
                heads[h] += math.sqrt(float(o @ o))
    np.testing.assert_allclose(imp["heads"][2].numpy(), heads / n, rtol=1e-5)
    np.testing.assert_allclose(imp["mlp"][2].numpy(), mlp / n, rtol=1e-5)
    assert len(imp["heads"]) == len(imp["mlp"]) == 4


@pytest.mark.parametrize("kwargs, message", [
    ({"layers": 5}, "layers 5: the teacher has 4 layers"),
    ({"layers": 0}, "layers 0: the teacher has 4 layers"),
    ({"heads": 5}, "heads 5 is not a multiple of the teacher's 2 key-value heads"),
    ({"heads": 8}, "heads 8: the teacher has 6 attention heads"),
    ({"intermediate": 65}, "intermediate 65: the teacher has 64 MLP channels"),
    ({"intermediate": 0}, "intermediate 0: the teacher has 64 MLP channels"),
])
def test_check_shape_rejects_impossible_students(kwargs, message):
    with pytest.raises(InputError, match=message):
        prune.check_shape(_llama().config, **kwargs)
    prune.check_shape(_llama().config, layers=4, heads=2, intermediate=1)   # the edges are fine


def test_bad_inputs_give_one_line_errors():
    from transformers import GPT2Config, GPT2LMHeadModel

    teacher = _llama()
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_embd=16, n_layer=1, n_head=2))
    for call in (lambda: prune.supported(gpt2), lambda: prune.block_importance(gpt2, _ids())):
        with pytest.raises(InputError, match="pruning does not support GPT2LMHeadModel"):
            call()
    with pytest.raises(InputError, match="needs `importance`"):
        prune.prune(teacher, intermediate=32)
    with pytest.raises(InputError, match="needs `importance`"):
        prune.prune(teacher, heads=4)
    imp = prune.activation_importance(teacher, _ids())
    with pytest.raises(InputError, match="heads 5 is not a multiple of the teacher's 2 key-value heads"):
        prune.prune(teacher, heads=5, importance=imp)
    with pytest.raises(InputError, match="intermediate 100: the teacher has 64"):
        prune.prune(teacher, intermediate=100, importance=imp)
    with pytest.raises(InputError, match="keep_layers .*the teacher has 4 layers"):
        prune.prune(teacher, keep_layers=[0, 4])
    with pytest.raises(InputError, match="keep_layers"):
        prune.prune(teacher, keep_layers=[1, 1])
    with pytest.raises(InputError, match="cannot keep 5 layers: the teacher has 4"):
        prune.layers_to_keep([0.1, 0.2, 0.3, 0.4], 5)
    with pytest.raises(InputError, match="cannot keep 0 layers"):
        prune.layers_to_keep([0.1, 0.2, 0.3, 0.4], 0)
    with pytest.raises(InputError, match="calibration must be a non-empty"):
        prune.block_importance(teacher, torch.zeros(0, 4, dtype=torch.long))
    from transformers import LlamaConfig
    odd = LlamaConfig(vocab_size=128, hidden_size=20, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=4, head_dim=8, intermediate_size=64)
    with pytest.raises(InputError, match=r"heads 3: LlamaConfig rejects it \(The hidden size \(20\) is not a multiple"):
        prune.check_shape(odd, heads=3)
    prune.check_shape(odd, heads=2)
    assert prune.supported(teacher) == "llama" and prune.supported(_bert()) == "bert"
    from transformers import BertConfig, BertModel
    assert prune.supported(BertModel(BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=1,
                                                num_attention_heads=2, intermediate_size=8))) == "bert"


@pytest.mark.slow
def test_smollm2_dropping_the_four_lowest_bi_layers_keeps_perplexity_below_twice_the_teachers():
    from helpers import models
    from helpers.datasets.corpus import load_corpus
    from helpers.lm.conventions import pack_blocks

    loaded = models.load("smollm2-135m")
    model, tok = loaded.model, loaded.tokenizer
    train, held = load_corpus("gensim")
    calib = pack_blocks(train[:400], tok, block_size=128, objective="causal")[:16]
    test = pack_blocks(held, tok, block_size=128, objective="causal")[:8]
    assert calib.shape == (16, 128) and test.shape == (8, 128)

    @torch.no_grad()
    def perplexity(m):
        return math.exp(float(np.mean([m(input_ids=b[None], labels=b[None]).loss.item() for b in test])))

    bi = prune.block_importance(model, calib)
    keep = prune.layers_to_keep(bi, model.config.num_hidden_layers - 4)
    student = prune.prune(model, keep_layers=keep)
    teacher_ppl, student_ppl = perplexity(model), perplexity(student)
    assert len(student.model.layers) == 26 and len(model.model.layers) == 30
    assert teacher_ppl < 100 and student_ppl < 2 * teacher_ppl, (teacher_ppl, student_ppl, keep)
