"""Helper package of the book *Representational harms in pretrained language models*.

One module per concern; how data flows and who owns what: ``docs/ARCHITECTURE.md``. Lower
layers never import higher ones (leaves first)::

    errors      error types: one clear line each (the CLI prints ``harms: error: ...``)
    paths       where data, caches and results live (HARMS_* environment variables)
    tables      read input tables, write result tables; the one atomic write, temporaries
    hashing     every SHA-256: bytes, text, files (memoised), canonical JSON of settings
    progress    a bar in a terminal, one line per step in a log
    distributed/ one command split across processes and machines (Accelerate): launch, worker, split
    stats       correlations with n, p and interval; effect sizes
    datasets/   evaluation data registry (URL, commit, sha256, license, citation), loaders
    published/  each paper's published tables as CSV data, one loader
    models      model registry and loading (hub ids, GGUF packages, local dirs, the zoo; classifiers)
    lm/         scoring (causal, pseudo-log-likelihood, XLNet), token log-probs, engines (vLLM)
    cache       scores and results on disk, keyed by what changes them (never by chapter)
    metrics/    one module per paper metric (safety score, StereoSet, CMA, regard, ...)
    runner      models x data -> cached results
    training/   training loops and distillation (distill), the book's own zoo (zoo)
    measures/   per-model measures (one per metric) that the chapters and the card both show
    plots       figures (functions returning a matplotlib Figure)
    report      sentences generated from numbers
    card/       the harm report card: catalogue, measuring, standing, comparison, writing, page
    chapters/   one tested module per chapter: tables, figures, facts for the prose
    cli         every ``harms`` subcommand: parsing and dispatch
    docs        docs/CLI.md generated from the CLI's parser
    book        the build: papermill, then Jupyter Book; ``make lab``

Nothing heavy is imported here: ``import helpers`` stays fast.
"""

import os as _os

# PyTorch's CPU allocator asks for transparent huge pages for large tensors when this is set
# (read once, at torch's first allocation: effective when helpers is imported before torch;
# the Makefile exports it for every run). Training the zoo spends a third of its CPU time in
# page faults without it (measured: 1.6x faster training steps with it).
_os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")

__version__ = "0.1.0"
