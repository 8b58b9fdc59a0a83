"""Helper package of the book *Representational harms in pretrained language models*.

One module per concept (see ``../shared/DESIGN.md`` for the flow)::

    datasets   evaluation data registry: load, validate, fetch
    models     model registry and loading (hub ids, GGUF packages, local dirs)
    scoring    sentence log-likelihoods: causal, pseudo-log-likelihood, XLNet
    cache      on-disk per-sentence score cache (atomic, resumable)
    metrics    one module per paper metric (safety score, StereoSet, CMA, ...)
    stats      correlations with intervals, effect sizes
    published  each paper's published tables as DataFrames, by table name
    plots      figures (functions returning a matplotlib Figure)
    distill    pre-training and knowledge distillation of the book's own zoo

Nothing heavy is imported here: ``import helpers`` stays fast.
"""

import os as _os

# PyTorch's CPU allocator asks for transparent huge pages for large tensors when this is set
# (read once, at torch's first allocation: effective when helpers is imported before torch;
# the Makefile exports it for every run). Training the zoo spends a third of its CPU time in
# page faults without it (measured: 1.6x faster training steps with it).
_os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")

__version__ = "0.1.0"
