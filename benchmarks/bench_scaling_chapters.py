"""The paper profile's work outside chapters 01-04, on paper (issue 27; docs/SCALING.md): what a
paper build computes in chapters 05-07, and how much of it `harms book --machines` splits.

    .venv/bin/python benchmarks/bench_scaling_chapters.py [--no-append]

Counts measured here from the data the chapters read under the paper profile (BOLD and StereoSet
prompts, CEAT contexts, token lengths under SmolLM2's BPE tokenizer) or cited where the data are
hub-only (CivilComments' and HateXplain's training splits, the ATOMIC sentences of seed 002's §2.3,
IMDB's training split). The rates of this machine and the GPU assumptions are those of
benchmarks/bench_scaling.py (read from benchmarks/scaling_inputs.json, its last run). Nothing is
timed here.

FLOPs, with N = 12 layers d^2 (as bench_scaling.py), F(S) = 2 N S + 4 layers S^2 d one forward pass
over S tokens, and 2 d V per position where a language-model head is evaluated:
  a forward pass per text (CEAT's word vectors, StereoSet, a cloze fill-in): F(S) + heads;
  fine-tuning: 3 F(S) per example and epoch (forward and backward);
  causal sampling of T tokens after a P-token prompt with a key-value cache: F(P + T) + 2 d V T;
  Gibbs sampling of a masked LM (chapter 06, Wang & Cho): 10 T passes F(P + T + 2) + 2 d V each;
  distillation: the teacher's F(S) + the student's 3 F(S) per example and epoch.
Upper bounds where the chapter stops early (chapter 05's early stopping) or drops sentences
(chapter 07's first step).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scoring import parser, publish  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from helpers.progress import duration  # noqa: E402

# cited counts (the data are hub-only here)
CIVILCOMMENTS_TRAIN = 1_804_874      # Jigsaw Unintended Bias / CivilComments train split (Borkan et al. 2019)
HATEXPLAIN_TRAIN = 15_383            # HateXplain's 8:1:1 split of 20,148 posts (Mathew et al. 2021)
ATOMIC_SENTENCES = {"en": 378_000, "fr": 198_300, "ar": 160_552}   # seed 002, §2.3
IMDB_TRAIN = 25_000                  # Maas et al. (2011)
MLMA_TRAIN = 5_083                   # seed 003's upstream split of MLMA (80 / 10 / 10)
# shapes of the models no table of bench_scaling.py holds: (layers, hidden, vocabulary, objective)
EXTRA_SHAPES = {"EleutherAI/gpt-neo-125M": (12, 768, 50257, "causal"),
                "EleutherAI/gpt-neo-1.3B": (24, 2048, 50257, "causal"),
                "EleutherAI/gpt-neo-2.7B": (32, 2560, 50257, "causal"),
                "almanach/camembert-base": (12, 768, 32005, "masked"),
                "aubmindlab/bert-base-arabertv02": (12, 768, 64000, "masked"),
                "huawei-noah/TinyBERT_General_4L_312D": (4, 312, 30522, "masked")}
VOCAB = {"BERT-uncased": 30522, "BERT-cased": 28996, "RoBERTa": 50265, "ELECTRA-generator": 30522,
         "ALBERT": 30000, "GPT-2": 50257, "XLNet": 32000}


def shapes() -> dict[str, tuple[int, int, int, str]]:
    import pandas as pd

    paper = pd.read_csv(ROOT / "helpers" / "models" / "paper_models.csv")
    out = {m.hub_id: (m.layers, m.hidden, VOCAB[m.family], m.objective) for m in paper.itertuples()}
    return {**out, **EXTRA_SHAPES}


def forward(shape, s: float) -> float:
    layers, d, _, _ = shape
    return 2 * 12 * layers * d * d * s + 4 * layers * s * s * d


def head(shape) -> float:
    _, d, v, _ = shape
    return 2 * d * v


def mean_tokens(texts) -> float:
    from helpers import models

    tok = models.load("smollm2-135m").tokenizer
    ids = tok(list(texts))["input_ids"]
    return sum(map(len, ids)) / len(ids)


def workloads() -> tuple[list[tuple[str, float, bool, str]], dict]:
    """(what, FLOPs, how the book's prefill splits it, how counted) per workload, and the counts."""
    from helpers import book
    from helpers.chapters import ch06_intrinsic_extrinsic as ch06
    from helpers.datasets import probing as probing_data, stereoset as stereoset_data
    from helpers.metrics import probing

    cfg = book.load_profile("paper")
    p6 = book.chapter_parameters(cfg, "ch06_intrinsic_extrinsic")
    p7 = book.chapter_parameters(cfg, "ch07_probing")
    sh = shapes()
    m6 = [sh[m] for m in p6["models"]]
    generating = [sh[m] for m in p6["models"] if m not in p6["bold_exclude"]]
    found = ch06.contexts(p6)
    prompts = ch06.bold_prompts(p6)["prompt"].tolist() + ch06.stereoset_prompts(p6)["prompt"].tolist()
    intra = stereoset_data.load_intrasentence()
    en = probing.build_sentences(probing_data.load_patterns(language="en").query("head_id < 1000"),
                                 probing_data.load_groups(language="en"))
    c = {"ceat_contexts": len(found), "ceat_tokens": mean_tokens(found["text"]) + 2,
         "prompts": len(prompts), "prompt_tokens": mean_tokens(prompts), "new_tokens": p6["max_new_tokens"],
         "stereoset_sentences": len(intra), "stereoset_tokens": mean_tokens(intra["sentence"]) + 2,
         "atomic_tokens": mean_tokens(en["template"].sample(5000, random_state=0)) + 2}
    P, T = c["prompt_tokens"], c["new_tokens"]
    gen = sum(forward(s, P + T) + head(s) * T if s[3] == "causal"
              else 10 * T * (forward(s, P + T + 2) + head(s)) for s in generating)
    toxd_s, hatex_s = 64 + 2, 48
    rows = [
        ("06 CEAT word vectors", c["ceat_contexts"] * sum(forward(s, c["ceat_tokens"]) for s in m6), "by text",
         f"{c['ceat_contexts']:,} contexts (RedditBias and BOLD, up to {p6['contexts_per_word']:,} per word) x "
         f"{len(m6)} models, one pass of {c['ceat_tokens']:.0f} tokens"),
        ("06 StereoSet sentences", c["stereoset_sentences"] * sum(
            forward(s, c["stereoset_tokens"]) + head(s) * c["stereoset_tokens"] for s in m6 if s[3] != "encoder"), "by text",
         f"{c['stereoset_sentences']:,} intrasentence sentences x {len(m6)} models, a pass with the head at every position"),
        ("07 cloze fill-ins", sum(n * sum(forward(sh[m], c["atomic_tokens"]) + head(sh[m]) for m in p7["models"][lang])
                                  for lang, n in ATOMIC_SENTENCES.items()), "by text",
         "seed 002's 378,000 / 198,300 / 160,552 sentences (before the first step drops some) x their language's "
         f"models, one pass of {c['atomic_tokens']:.0f} tokens"),
        ("06 BOLD and StereoSet-prompt generations", c["prompts"] * gen, "by model",
         f"{c['prompts']:,} prompts of {P:.1f} tokens, {T} new tokens, {len(generating)} generating models "
         f"({sum(s[3] == 'causal' for s in generating)} causal, the masked ones by Gibbs sampling, 10 x {T} passes)"),
        ("06 ToxD classifiers (fine-tuned)", 0.9 * CIVILCOMMENTS_TRAIN * sum(3 * forward(s, toxd_s) for s in m6),
         "by model",
         f"{CIVILCOMMENTS_TRAIN:,} CivilComments training comments (90 %; 10 % validate) x 1 epoch x {len(m6)} models "
         f"at {toxd_s} tokens (max_length 64)"),
        ("06 HateX classifiers (fine-tuned)", 0.9 * HATEXPLAIN_TRAIN * 3 * sum(3 * forward(s, hatex_s) for s in m6),
         "by model",
         f"{HATEXPLAIN_TRAIN:,} HateXplain posts (90 %) x 3 epochs x {len(m6)} models at {hatex_s} tokens"),
    ]
    teacher, student = sh["bert-base-uncased"], sh["huawei-noah/TinyBERT_General_4L_312D"]
    augmented = MLMA_TRAIN * 21
    rows += [
        ("05 teachers fine-tuned", (MLMA_TRAIN + IMDB_TRAIN) * 30 * 3 * forward(teacher, 128), "no",
         f"BERT-base on MLMA ({MLMA_TRAIN:,}) and IMDB ({IMDB_TRAIN:,}) x 30 epochs at 128 tokens (upper bound: "
         "early stopping)"),
        ("05 augmentation and distillation", MLMA_TRAIN * 20 * 12 * (forward(teacher, 32) + head(teacher))
         + (augmented + IMDB_TRAIN) * (20 * (forward(teacher, 128) + 3 * forward(student, 128))
                                       + 3 * (forward(teacher, 64) + 3 * forward(student, 64))), "no",
         f"MLMA x 20 augmentations (12 masked words each, BERT-base), then TinyBERT 4L-312D on {augmented:,} + "
         f"{IMDB_TRAIN:,} examples: 20 epochs at 128 tokens, 3 at 64, the teacher's pass each time"),
    ]
    return rows, c


def round_robin_makespans(parts=(1, 2, 4, 8, 16)) -> dict[int, float]:
    """The ToxD fine-tuning's wall time on ``p`` machines over its time on one, with the models
    dealt round-robin in the chapter's order (``distributed.mine``): the busiest machine's share."""
    from helpers import book

    sh = shapes()
    models = book.chapter_parameters(book.load_profile("paper"), "ch06_intrinsic_extrinsic")["models"]
    cost = [forward(sh[m], 66) for m in models]
    return {p: max(sum(cost[r::p]) for r in range(p)) / sum(cost) for p in parts}


def main() -> None:
    args = parser(__doc__).parse_args()
    inputs = json.loads((ROOT / "benchmarks" / "scaling_inputs.json").read_text())
    gpus, u, rate = inputs["gpus"], inputs["utilisation"], inputs["rates"]["causal_gflops"] * 1e9
    chapters_01_04 = next(v for k, v in inputs["workload_flops"].items() if k.startswith("paper profile"))
    rows, counts = workloads()
    lines = ["", f"Chapters 01-04 of the paper profile (bench_scaling.py): {chapters_01_04:.2e} FLOPs. "
             "This machine's column uses the causal scorer's measured rate "
             f"({rate / 1e9:.0f} GFLOP/s); the GPU column one device at u = {u:.0%} of the datasheet peak "
             "(training at the same u). Split: how `harms book --machines` shares it between machines (its "
             "prefill): text by text, whole models dealt round-robin, or not (machine 0, one process).", "",
             "| workload | counted | FLOPs | × chapters 01-04 | split | this machine | 1 GPU (" + " / ".join(gpus) + ") |",
             "|---|---|---|---|---|---|---|"]
    for what, flops, split, how in rows:
        gpu = " / ".join(duration(flops / (peak * u)) for peak in gpus.values())
        lines.append(f"| {what} | {how} | {flops:.1e} | {flops / chapters_01_04:.2f} | {split} | "
                     f"{duration(flops / rate)} | {gpu} |")
    total = sum(f for _, f, _, _ in rows) + chapters_01_04
    by = {kind: sum(f for _, f, s, _ in rows if s == kind) for kind in ("by text", "by model", "no")}
    by["by text"] += chapters_01_04
    lines += ["", "Of the paper profile counted here (chapters 01-04, split by text, included): "
              + "; ".join(f"split {kind}: {f:.1e} FLOPs ({f / total:.0%})" if kind != "no" else
                          f"machine 0 alone: {f:.1e} FLOPs ({f / total:.0%})" for kind, f in by.items()) + ". "
              "Split by model, the work takes as long as the busiest machine's models: the ToxD fine-tuning's "
              "wall time over one machine's, models dealt round-robin in the chapter's order: "
              + ", ".join(f"{p} machines {f:.2f}" for p, f in round_robin_makespans().items()) + ".", "",
              "Counts measured here: " + json.dumps({k: round(v, 1) for k, v in counts.items()})]
    publish("The paper profile beyond chapters 01-04 (issue 27)", lines, threads=args.threads,
            append=not args.no_append)


if __name__ == "__main__":
    main()
