"""Evaluation data: the registry (where each set comes from) and one loader per data set.

    >>> from helpers import datasets
    >>> datasets.names()                 # every registered data set
    >>> datasets.load("toxigen")         # a tidy, validated DataFrame (any registered name)
    >>> datasets.info("toxigen")         # provenance: URL pinned to a commit, sha256, license, citation

- :mod:`~helpers.datasets.registry`: :class:`DatasetSpec`, :func:`register`, :func:`names`,
  :func:`spec`, :func:`info`, :func:`path`, :func:`fetch` and the registered sets;
- :mod:`~helpers.datasets.safety_sets`: ToxiGen / ImplicitHate (seed 000 §3.2.1), validation,
  :func:`sample_per_group`, :func:`group_counts`;
- :mod:`~helpers.datasets.stereoset`, :mod:`~helpers.datasets.cma`: StereoSet dev set and reference
  scores, causal-mediation-analysis results;
- :mod:`~helpers.datasets.groups`: the target groups (``groups.csv``): :data:`GROUPS`,
  :data:`GROUP_LABELS`, :func:`group_subjects`;
- :mod:`~helpers.datasets.score_files`: :func:`scores_from_file`, per-sentence scores computed
  elsewhere (``harms safety --scores``), joined to their data set and checked by text.

:func:`load` returns, per registered set (the entry's ``loader``):

=========================  ================================================================
toxigen, implicit-hate     id, text, toxicity, label, target_groups (also any user file in
                           that format: JSON list, JSONL or CSV)
stereoset-dev              cluster_id, bias_type, target, context, sentence_id, sentence,
                           gold_label, template_word (intrasentence examples)
stereoset                  model, task, domain, score, value (upstream reference scores)
causal_mediation_analysis  source_file, dataset, model_version, ..., mean_model_direct_effect
                           (attention-intervention summary, one row per upstream result file)
imdb, rotten-tomatoes      review_id, text, label (positive/negative), source, split (seeded
                           train / validation / test; :mod:`~helpers.datasets.reviews`)
bec-pro                    sentence, template (person as the blank), person, gender, profession,
                           profession_gender, pattern (:mod:`~helpers.datasets.words`)
seat                       test, role (targ1/targ2/attr1/attr2), category, example
kurita-lists               list (positive_traits, negative_traits, in_demand_tech_skills), item
atomic-probing             language, head_id, head, pattern_id, pattern (:mod:`~helpers.datasets.probing`)
atomic-probing-groups      language, gender, group
mlma                       tweet_id, language, text, sentiment, label (toxic/non-toxic), directness,
                           target, group
insults                    text (unescaped), label (toxic = insult / non-toxic), split (Kaggle's
                           train / test), source (:mod:`~helpers.datasets.abusive`)
bold                       prompt_id, domain, group, entity, prompt, wikipedia (:mod:`~helpers.datasets.bold`)
crows-pairs                pair_id, sent_more, sent_less, stereo_antistereo, bias_type
                           (:mod:`~helpers.datasets.bias_sets`, as the four below)
redditbias                 category, group, comment_id, text (``kind="test"``/``"valid"``: the
                           counterfactual pairs, see :func:`~helpers.datasets.bias_sets.load_redditbias`)
bug                        sentence_id, text, profession, pronoun, profession_index, pronoun_index,
                           gender, stereotype, distance, corpus
gap                        ID, Text, Pronoun, Pronoun-offset, A, A-offset, A-coref, B, B-offset,
                           B-coref, URL (as released)
panda                      original, rewrite, selected_word, perturbed_category, source_data_type
holistic-bias              axis, bucket, descriptor, preference
civil-comments             comment_id, split, text, toxicity, label (toxic at >= 0.5); the
                           hub's Parquet files (or the data directory's copy)
hatexplain                 post_id, split, text, label (majority of three), binary_label
                           (toxic/non-toxic), targets (``;``-joined communities)
bias-madlibs-77k           sentence_id, text, label (toxic/non-toxic), template, identity,
                           identity_group (:mod:`~helpers.datasets.madlibs`)
bias-madlibs               the same, then the words of the other slots: adjective, name,
                           verb, occupation
=========================  ================================================================
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Callable

import pandas as pd

from helpers.datasets.groups import GROUP_LABELS, GROUPS, group_subjects, group_table, with_group_labels
from helpers.datasets.registry import (REGISTRY, DataFile, DatasetSpec, fetch, info, names, path, register,
                                       spec)
from helpers.datasets.safety_sets import (COLUMNS, LABELS, X000D, group_counts, load_safety_set,
                                          sample_per_group)
from helpers.datasets.score_files import scores_from_file
from helpers.errors import DataNotFoundError, HarmsError

__all__ = ["load", "loader", "path", "fetch", "info", "names", "spec", "register", "sample_per_group",
           "group_counts", "load_safety_set", "group_subjects", "group_table", "with_group_labels", "GROUPS", "GROUP_LABELS",
           "LABELS", "COLUMNS", "X000D", "DatasetSpec", "DataFile", "REGISTRY", "scores_from_file"]


def loader(name: str) -> Callable[..., pd.DataFrame]:
    """The loader function of a registered data set (its spec's ``loader``, ``module.function``)."""
    s = spec(name)
    if not s.loader:
        raise HarmsError(f"data set {name!r} has no loader (set DatasetSpec.loader)")
    module, _, function = s.loader.rpartition(".")
    try:
        return getattr(importlib.import_module(f"{__name__}.{module}"), function)
    except (ImportError, AttributeError):
        raise HarmsError(f"data set {name!r}: loader {s.loader!r} not found in {__name__}") from None


def load(name_or_path: str | os.PathLike, **options) -> pd.DataFrame:
    """A data set as a tidy, validated DataFrame: a registered name (its loader, columns in the
    module docstring) or a user file in the safety-set format (:func:`load_safety_set`).
    ``options`` go to the loader (e.g. ``fix_x000d=False`` for ToxiGen)."""
    key = str(name_or_path)
    if key in REGISTRY:
        return loader(key)(key, **options)
    if not Path(name_or_path).expanduser().is_file():
        raise DataNotFoundError(f"{key!r} is neither a data set ({', '.join(names())}) nor a file")
    return load_safety_set(name_or_path, **options)
