"""Are a model's per-sentence scores the same whether its GGUF is converted during the scoring (a cold
cache) or read from the converted copy (issue 38)? Two fresh score caches under BASE:

    .venv/bin/python benchmarks/check_cold_warm_scores.py BASE [MODEL]     # default qwen2.5-coder-0.5b

The first converts the model (35-60 s) and scores 640 ToxiGen sentences; the second gets only the
converted copy and scores them again. Prints both times and how many log-likelihoods differ. Before
4ddfa87 the conversion was timed with the score cache's first chunk, which shrank the chunks after
it and with them which sentences shared a batch: 203 of 640 differed in float32's last bits.
"""

import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

base, name = Path(sys.argv[1]), (sys.argv[2] if len(sys.argv) > 2 else "qwen2.5-coder-0.5b")
os.environ["HARMS_CACHE_DIR"] = str(base / "cold")
from helpers import datasets, models  # noqa: E402  (after the cache directory is set)
from helpers.lm import scoring  # noqa: E402

texts = datasets.load("toxigen")["text"].drop_duplicates().tolist()[:640]
out = {}
for run in ("cold", "warm"):
    if run == "warm":
        for part in ("gguf", "package-models"):                    # the converted copy, no scores
            if (base / "cold" / part).is_dir():
                shutil.copytree(base / "cold" / part, base / "warm" / part)
        os.environ["HARMS_CACHE_DIR"] = str(base / "warm")
    t = time.perf_counter()
    out[run] = scoring.score(models.lazy(name), texts, progress=False)["log_likelihood"].to_numpy()
    print(f"{run}: {len(texts)} sentences in {time.perf_counter() - t:.1f} s", flush=True)
print(f"{name}: {int((out['cold'] != out['warm']).sum())} of {len(texts)} log-likelihoods differ "
      f"(identical: {np.array_equal(out['cold'], out['warm'])})")
