"""Wall time of the paper profile and of full ToxiGen x 24 models, on paper (issue 27, docs/SCALING.md).

    .venv/bin/python benchmarks/bench_scaling.py [--n 120] [--threads 2] [--no-append]

Measured in this run, on this machine: the token lengths of the 6,514 SafeNLP ToxiGen sentences
under a BPE (SmolLM2's, GPT-2-like) and a WordPiece tokenizer (MiniLM-L6's = bert-base-uncased's);
our scorer's achieved FLOP/s, causal (SmolLM2-135M) and pseudo-log-likelihood (a BERT-base-shaped
model), and the fp32 matmul rate in the same process. From these the script estimates each
workload's FLOPs model by model (the 24 models of seed 000's Table 13, by shape) and the wall time

    T(devices) = sum over models of [ FLOPs(model) / (devices * peak * u) + overhead ]

with ``peak`` and ``u`` (utilisation) per device: here, the measured achieved rate (u folded in);
for GPUs, the datasheet's dense fp32 / TF32 peak and an assumed u. Every input is printed, so a
user can plug in their own.

FLOPs per sentence of L tokens (S = L + the model's special tokens), with N = 12 * layers * d^2
(the non-embedding weights of a transformer whose feed-forward is 4d wide: every model of the
table but MobileBERT, which this overestimates) and V the vocabulary:
  causal:              2 N S + 4 layers S^2 d + 2 d V L             (one pass, the head at every position)
  masked, permutation: L (2 N S + 4 layers S^2 d) + 2 (d^2 + d V) L (one pass per token, the head at the masked one)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scoring import build_bert, causal_flops, load_smollm2, load_texts, matmul_gflops, parser, \
    parse_or_run_job, pll_flops, publish, run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from helpers.progress import duration  # noqa: E402

TOXIGEN_FULL = 274_000          # sentences of the full machine-generated ToxiGen, "about 274k" (Hartvigsen et al. 2022)
VOCAB = {"BERT-uncased": 30522, "BERT-cased": 28996, "RoBERTa": 50265, "ELECTRA-generator": 30522,
         "ALBERT": 30000, "GPT-2": 50257, "XLNet": 32000}
BPE_FAMILIES = {"RoBERTa", "GPT-2", "XLNet"}      # byte-level BPE or SentencePiece: lengths close to SmolLM2's
SPECIALS = {"causal": 0, "masked": 2, "permutation": 2}
# Turc et al. (2019) BERT miniatures (chapter 04): 24 students, layers x hidden
TURC = [(layers, hidden) for layers in (2, 4, 6, 8, 10, 12) for hidden in (128, 256, 512, 768)]
# Cited peaks (dense, no sparsity), FLOP/s. NVIDIA A100 datasheet (2021): FP32 19.5 T, TF32 156 T;
# H100 SXM datasheet (2023): FP32 67 T, TF32 495 T. Scores are computed in fp32; TF32 needs
# torch.backends.cuda.matmul.allow_tf32 = True and moves log-likelihoods by ~1e-3 relative.
GPUS = {"A100 fp32": 19.5e12, "A100 TF32": 156e12, "H100 fp32": 67e12}
GPU_UTILISATION = 0.35          # assumed: a forward-only, padded, token-budgeted batch on one GPU
OVERHEAD_S = 60.0               # assumed per model and process: download from the hub's cache, load, launch


def job_lengths(a) -> dict:
    """Token lengths (no special tokens) of each data set's sentences under both tokenizers."""
    from transformers import AutoTokenizer

    from helpers import models
    from helpers.models.loading import package_folder

    sets = json.loads(Path(a.texts).read_text())
    bpe = models.load("smollm2-135m").tokenizer
    wordpiece = AutoTokenizer.from_pretrained(package_folder("minilm-l6"))
    return {f"{data}/{name}": [len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts]
            for data, texts in sets.items() for name, tok in (("bpe", bpe), ("wordpiece", wordpiece))}


def implicit_hate_texts() -> list[str]:
    base = Path(os.environ.get("HARMS_DATA_DIR", ROOT.parent / "shared" / "data"))
    return [r["text"] for r in json.loads((base / "implicit_hate_safenlp" / "implicitHate.json").read_text())]


def job_rates(a) -> dict:
    from helpers.lm import scoring

    texts = json.loads(Path(a.texts).read_text())
    peak = matmul_gflops()
    smol = load_smollm2()
    scoring.score(smol, texts[:4], cache=False, progress=False)           # warm-up
    t0 = time.perf_counter()
    df = scoring.score(smol, texts, cache=False, progress=False)
    causal_s = time.perf_counter() - t0
    ids = [smol.tokenizer(t)["input_ids"] for t in texts]
    c_flops = causal_flops(smol.model, [len(i) for i in ids])
    del smol
    from helpers import models

    bert = models.load(build_bert(texts, Path(a.dir) / "bert"), objective="masked")
    short = texts[: max(8, len(texts) // 4)]
    scoring.score(bert, short[:2], cache=False, progress=False)
    t0 = time.perf_counter()
    pdf = scoring.score(bert, short, cache=False, progress=False)
    pll_s = time.perf_counter() - t0
    lengths = [len(bert.tokenizer(t)["input_ids"]) for t in short]
    p_flops = pll_flops(bert.model, lengths, [L - 2 for L in lengths])
    return {"matmul_gflops": peak, "causal_tokens": int(df["n_tokens"].sum()), "causal_seconds": causal_s,
            "causal_gflops": c_flops / causal_s / 1e9, "pll_tokens": int(pdf["n_tokens"].sum()),
            "pll_seconds": pll_s, "pll_gflops": p_flops / pll_s / 1e9}


def sentence_flops(objective: str, layers: int, d: int, vocab: int, m: dict) -> float:
    """Expected FLOPs of one sentence from the moments of its length L (``m``: E[L], E[L^2], E[L^3])."""
    n = 12 * layers * d * d
    s = SPECIALS[objective]
    L, L2, L3 = m["L"], m["L2"], m["L3"]
    if objective == "causal":                          # one pass over S = L + s tokens
        return 2 * n * (L + s) + 4 * layers * d * (L2 + 2 * s * L + s * s) + 2 * d * vocab * L
    # L passes over S tokens: E[L S] and E[L S^2]
    return 2 * n * (L2 + s * L) + 4 * layers * d * (L3 + 2 * s * L2 + s * s * L) + 2 * (d * d + d * vocab) * L


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--n", type=int, default=120, help="ToxiGen sentences scored per rate measurement")
    a = parse_or_run_job(ap, lambda a: {"lengths": job_lengths, "rates": job_rates}[a.job])
    if a is None:
        return
    import numpy as np
    import pandas as pd

    texts = load_texts(10_000)
    me = [sys.executable, str(Path(__file__).resolve()), "--threads", str(a.threads)]
    with tempfile.TemporaryDirectory(prefix="bench_scaling_") as tmp:
        (Path(tmp) / "all.json").write_text(json.dumps({"toxigen": texts, "implicit-hate": implicit_hate_texts()}))
        (Path(tmp) / "some.json").write_text(json.dumps(texts[: a.n]))
        lengths = run(me + ["--job", "lengths", "--texts", str(Path(tmp) / "all.json"), "--dir", tmp], a.threads)
        rates = run(me + ["--job", "rates", "--texts", str(Path(tmp) / "some.json"), "--dir", tmp], a.threads)
    moments = {}
    for name, ls in lengths.items():
        x = np.asarray(ls, dtype=float)
        moments[name] = {"L": x.mean(), "L2": (x ** 2).mean(), "L3": (x ** 3).mean(), "n": len(x)}

    paper = pd.read_csv(ROOT / "helpers" / "models" / "paper_models.csv")

    def per_sentence(data: str) -> pd.DataFrame:
        return pd.DataFrame([{"model": m.hub_id, "objective": m.objective, "flops_per_sentence": sentence_flops(
            m.objective, m.layers, m.hidden, VOCAB[m.family],
            moments[f"{data}/{'bpe' if m.family in BPE_FAMILIES else 'wordpiece'}"])} for m in paper.itertuples()])

    table13, implicit = per_sentence("toxigen"), per_sentence("implicit-hate")
    turc = sum(sentence_flops("masked", la, h, 30522, moments["toxigen/wordpiece"]) for la, h in TURC)
    n_toxigen, n_implicit = moments["toxigen/bpe"]["n"], moments["implicit-hate/bpe"]["n"]
    workloads = {
        f"paper profile, chapters 01-04: {n_toxigen:,} ToxiGen and {n_implicit:,} ImplicitHate sentences x 24 "
        "models, ToxiGen x 24 Turc et al. students":
            (n_toxigen * (table13["flops_per_sentence"].sum() + turc)
             + n_implicit * implicit["flops_per_sentence"].sum(), 48),
        f"full ToxiGen ({TOXIGEN_FULL:,} sentences) x 24 models":
            (TOXIGEN_FULL * table13["flops_per_sentence"].sum(), 24),
    }
    here_rate = {"causal": rates["causal_gflops"] * 1e9, "masked": rates["pll_gflops"] * 1e9}
    # on this machine each model runs at its objective's measured rate
    causal_share = table13.loc[table13.objective == "causal", "flops_per_sentence"].sum() / \
        table13["flops_per_sentence"].sum()

    def here_seconds(flops: float) -> float:
        return flops * causal_share / here_rate["causal"] + flops * (1 - causal_share) / here_rate["masked"]

    lines = ["", "### Measured here",
             *[f"- {data} ({moments[data + '/bpe']['n']:,} sentences): mean length {moments[data + '/bpe']['L']:.1f} "
               f"BPE tokens (SmolLM2's), {moments[data + '/wordpiece']['L']:.1f} WordPiece tokens (bert-base-uncased's "
               f"vocabulary); mean squared length {moments[data + '/bpe']['L2']:.0f} / "
               f"{moments[data + '/wordpiece']['L2']:.0f}" for data in ("toxigen", "implicit-hate")],
             f"- fp32 matmul 2048^3: {rates['matmul_gflops']:.1f} GFLOP/s",
             f"- causal scoring, SmolLM2-135M, {a.n} sentences: {rates['causal_tokens'] / rates['causal_seconds']:.0f} "
             f"tokens/s, {rates['causal_gflops']:.1f} GFLOP/s achieved "
             f"({rates['causal_gflops'] / rates['matmul_gflops']:.0%} of the matmul rate)",
             f"- pseudo-log-likelihood, BERT-base shape: {rates['pll_tokens'] / rates['pll_seconds']:.1f} scored "
             f"tokens/s, {rates['pll_gflops']:.1f} GFLOP/s achieved "
             f"({rates['pll_gflops'] / rates['matmul_gflops']:.0%} of the matmul rate)",
             "", "### Estimated wall time",
             f"Assumed: GPU utilisation u = {GPU_UTILISATION:.0%} of the datasheet's dense peak; "
             f"{OVERHEAD_S:.0f} s per model and process for download, load and launch (paid in parallel). "
             "T = FLOPs / (devices x peak x u) + models x overhead.", "",
             "| workload | FLOPs | this machine (2 cores, measured rates) | 1 GPU | 8 GPUs | 8 nodes x 8 GPUs |",
             "|---|---|---|---|---|---|"]
    for name, (flops, n_models) in workloads.items():
        cells = [f"{flops:.2e}", duration(here_seconds(flops) + n_models * OVERHEAD_S)]
        for devices in (1, 8, 64):
            per = {g: flops / (devices * peak * GPU_UTILISATION) + n_models * OVERHEAD_S for g, peak in GPUS.items()}
            cells.append(" / ".join(f"{duration(s)}" for s in per.values()))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "GPU cells: " + " / ".join(GPUS) + " (datasheet dense peaks "
              + ", ".join(f"{g} {p / 1e12:g} TFLOP/s" for g, p in GPUS.items()) + ").", "",
              "Per model, FLOPs per ToxiGen sentence (the 24 models of Table 13):", "",
              "| model | objective | GFLOPs per sentence |", "|---|---|---|"]
    lines += [f"| {r.model} | {r.objective} | {r.flops_per_sentence / 1e9:.2f} |" for r in table13.itertuples()]
    publish("Scaling estimates (issue 27)", lines, threads=a.threads, append=not a.no_append)
    if a.no_append:
        return
    (ROOT / "benchmarks" / "scaling_inputs.json").write_text(json.dumps(
        {"moments": moments, "rates": rates, "gpus": GPUS, "utilisation": GPU_UTILISATION,
         "overhead_s": OVERHEAD_S, "workload_flops": {k: v[0] for k, v in workloads.items()}}, indent=2) + "\n")


if __name__ == "__main__":
    main()
