"""Model registry and loading.

A model is named once (its registry name) and that name is the key in every table, cache
entry and figure (docs/ARCHITECTURE.md, "Conventions").

- :mod:`helpers.models.registry`: :data:`REGISTRY` of :class:`ModelSpec` (the 24 PTLMs of
  seed 000 from ``paper_models.csv`` joined with the published Table 13, Google's miniature
  BERTs, the package models), :func:`spec`, :func:`paper_models`, :func:`miniature_berts`,
  :func:`offline_models`, :func:`package_models`, :func:`bert_mlm_params`;
- :mod:`helpers.models.loading`: :func:`load` -> :class:`LoadedModel`, :func:`lazy` ->
  :class:`LazyModel` (identity without loading the weights), :func:`weights_fingerprint`,
  :func:`tokenizer_fingerprint`, :func:`infer_objective`, :func:`hub_offline_reason`, and
  the checksummed converted copies of GGUF models (:func:`verify_converted`);
- :mod:`helpers.models.text_classifiers`: the pretrained classifiers of generated text, loaded
  (the hub's regard and ToxiGen classifiers, or offline their stand-ins VADER, HateSonar,
  alt-profanity-check: :func:`~helpers.models.text_classifiers.classifier`), which the metrics of
  :mod:`helpers.metrics.regard` take already built. Imported as a module
  (``from helpers.models import text_classifiers``), not re-exported here.
"""

from helpers.models.loading import (LazyModel, LoadedModel, config_max_length, encoder_source, gguf_metadata,
                                    hub_offline_reason, infer_objective, lazy, load, package_folder,
                                    tokenizer_fingerprint,
                                    verify_converted, weights_fingerprint)
from helpers.models.registry import (REGISTRY, ModelSpec, Objective, bert_mlm_params, core_models, core_packages,
                                     encoder_models, lineage, miniature_berts, offline_models, package_models, paper_models,
                                     spec, zoo_models)


__all__ = ["REGISTRY", "ModelSpec", "Objective", "LoadedModel", "LazyModel", "load", "lazy", "spec",
           "paper_models", "miniature_berts", "offline_models", "core_models", "core_packages", "package_models",
           "zoo_models", "lineage",
           "encoder_models", "bert_mlm_params", "infer_objective",
           "weights_fingerprint", "tokenizer_fingerprint", "config_max_length", "gguf_metadata",
           "verify_converted", "hub_offline_reason", "package_folder", "encoder_source"]
