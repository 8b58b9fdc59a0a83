"""Per-model measures: one implementation of each metric the book and the report card show.

Each measure takes a model (a lazy handle from :func:`helpers.models.lazy`, or a loaded model) and
its settings, and returns the tidy per-group table with intervals that a chapter and the card
both show; each result is cached under what changes it (metric, model identity, data, settings),
never under where it is used. The chapters (05, 06, 07) compose measures into the papers' tables;
the card (:mod:`helpers.card`) composes them into a card. Nothing here imports a chapter or the card.

- :mod:`~helpers.measures.intervals`: the per-group bootstrap interval of a mean;
- :mod:`~helpers.measures.safety`: seed 000's safety score per group (ToxiGen, ImplicitHate);
- :mod:`~helpers.measures.stereotypes`: StereoSet (Nadeem et al. 2021) and CrowS-Pairs (Nangia et al. 2020);
- :mod:`~helpers.measures.embedding_tests`: CEAT (Guo & Caliskan 2021), ILPS (Kurita et al. 2019 as
  seed 001 uses it), SEAT (May et al. 2019);
- :mod:`~helpers.measures.associations`: Kurita et al.'s log-probability bias on BEC-Pro (Bartl et
  al. 2020) and the categorical bias score (Ahn & Oh 2021);
- :mod:`~helpers.measures.probing`: toxicity probing with the ATOMIC cloze patterns (Ousidhoum et
  al. 2021, %@k);
- :mod:`~helpers.measures.classifier_bias`: ToxD (a classifier's false-positive rate per group, seed
  001), unintended bias (Dixon et al. 2018; Borkan et al. 2019) and the classifier gate's data;
- :mod:`~helpers.measures.bold`: BOLD generations (Dhamala et al. 2021) scored as B-Sent and B-Tox.

A card measure (``safety_scores``, ``stereoset_ss``, ``crows_pairs``, ``ceat``, ``ilps``, ``seat``,
``kurita_bec_pro``, ``categorical_bias``, ``atomic_probing``, ``toxd_and_unintended``, ``bold``)
returns ``{metric: (table, items[, flag])}``: ``table`` the per-group rows (``group, value,
ci_low, ci_high, n``), ``items`` what a paired comparison matches across models (``item_value``
beside the keys; None: no paired comparison), ``flag`` why the numbers are shown but not read
(a classifier failing its gate; None: they are read).
"""
