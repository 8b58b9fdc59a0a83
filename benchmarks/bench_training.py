"""Training benchmarks: (1) throughput of helpers.distill.train vs transformers.Trainer (issue 4);
(2) with ``--recipes``: students pruned from SmolLM2-135M and healed vs the same shapes trained
from random weights for the same time (issue 11; the ratio of perplexities is the headline).

(1) Throughput.

Same process, same torch threads, same student (GPT-2 architecture, causal LM), same packed
token blocks, same batch size, number of steps, optimiser (AdamW, lr, weight decay), linear
warm-up/decay schedule and gradient clipping (1.0, the Trainer default). Trainer settings:
``report_to="none"``, ``save_strategy="no"``, ``eval_strategy="no"``, ``disable_tqdm=True``
(our loop runs with ``progress=False`` too), ``logging_steps`` left at its default (500, so
no logging within the run), ``dataloader_num_workers=0`` (default). The runs alternate
(ours, Trainer, ours, Trainer, ...) so a change in machine load hits both. Reported: the best
wall-clock run of each (least interference from other jobs on shared cores) and the median over
runs of the throughput of each run's fastest quarter of steps. Goal: ours not slower (ratio >= 1).

    .venv/bin/python benchmarks/bench_training.py [--steps 30] [--repeats 3] [--append]

(2) Recipes. For each student shape (``--shapes``, default the zoo's L24, L18 and L24-I768):
the pruned recipe (importance scores on 16 calibration blocks — their time shared equally by the
students — then pruning and ``--heal-steps`` LM-loss steps of 4 x 128 tokens at lr 3e-4, the
zoo's defaults) against the same architecture from random weights trained with the LM loss
(lr 2e-3 as the scratch zoo, same batches) for as many steps as fit in the pruned recipe's time
(measured step time of a first scratch run). Held-out perplexity on the zoo's 16 blocks.

    .venv/bin/python benchmarks/bench_training.py --recipes [--heal-steps 10] [--append]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.training import distill, zoo  # noqa: E402


def recipes(a) -> None:
    """Pruned-and-healed vs from-scratch students at equal time (see the module docstring)."""
    from transformers import AutoModelForCausalLM

    from helpers import models
    from helpers.datasets.corpus import load_corpus
    from helpers.lm.conventions import pack_blocks
    from helpers.metrics import quality
    from helpers.training import prune, students

    h = models.load("smollm2-135m")
    teacher, tok = h.model, h.tokenizer
    train_lines, held_lines = load_corpus("gensim")
    blocks = pack_blocks(train_lines, tok, block_size=128, objective="causal")
    held = pack_blocks(held_lines, tok, block_size=128, objective="causal")[:16]
    unigram = quality.unigram_perplexity(quality.unigram_log_probs(blocks.flatten(), len(tok)), held[:, 1:].flatten())
    teacher_ppl = quality.heldout_perplexity(teacher, held, objective="causal")
    g = torch.Generator().manual_seed(0)
    calib = blocks[torch.randperm(blocks.shape[0], generator=g)[:16]]
    t0 = time.perf_counter()
    bi, act = prune.block_importance(teacher, calib), prune.activation_importance(teacher, calib)
    importance_seconds = time.perf_counter() - t0
    load0, rows = os.getloadavg()[0], []
    for label in a.shapes:
        spec = students.parse(label)
        t0 = time.perf_counter()
        student = students.build(teacher, spec, block_importance=bi, activation_importance=act)
        prune_seconds = time.perf_counter() - t0
        pruned_ppl = quality.heldout_perplexity(student, held, objective="causal")
        healed = students.heal(student, blocks, objective="lm", steps=a.heal_steps, batch_size=4, lr=3e-4, seed=0,
                               arch="gpt2", progress=False)
        seconds = prune_seconds + healed["seconds"] + importance_seconds / len(a.shapes)
        ppl = quality.heldout_perplexity(student, held, objective="causal")
        torch.manual_seed(0)
        scratch = AutoModelForCausalLM.from_config(student.config)
        probe = students.heal(scratch, blocks, objective="lm", steps=2, batch_size=4, lr=2e-3, seed=0, arch="gpt2",
                              progress=False, warmup=0.0)
        steps = max(2, round(seconds / (probe["seconds"] / 2)))
        torch.manual_seed(0)
        scratch = AutoModelForCausalLM.from_config(student.config)
        trained = students.heal(scratch, blocks, objective="lm", steps=steps, batch_size=4, lr=2e-3, seed=0,
                                arch="gpt2", progress=False)
        scratch_ppl = quality.heldout_perplexity(scratch, held, objective="causal")
        rows.append(dict(shape=label, params=int(student.num_parameters()), pruned_seconds=seconds,
                         perplexity_after_pruning=pruned_ppl, perplexity_pruned_healed=ppl, scratch_steps=steps,
                         scratch_seconds=trained["seconds"], perplexity_scratch=scratch_ppl,
                         ratio=scratch_ppl / ppl))
        print(rows[-1], flush=True)
    load = max(load0, os.getloadavg()[0])
    head = (f"teacher SmolLM2-135M perplexity {teacher_ppl:.1f}, unigram {unigram:.0f}; importance scores "
            f"{importance_seconds:.1f} s (shared by the students); heal {a.heal_steps} steps of 4 x 128 tokens")
    print(head)
    if a.append:
        cmd = "HARMS_CACHE_DIR=... .venv/bin/python benchmarks/bench_training.py " + " ".join(sys.argv[1:])
        text = (f"\n## Students: pruned and healed vs from scratch at equal time (issue 11)\n\n"
                f"Command: `{cmd}`  \nDate: {dt.datetime.now().isoformat(timespec='minutes')}  \n"
                f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
                f"{torch.get_num_threads()} threads, load average up to {load:.1f}  \n{head}. Held-out perplexity on "
                f"the zoo's 16 blocks of 128 tokens (gensim held-out split); the from-scratch run trains the same "
                f"architecture from random weights (lr 2e-3) for as many steps as fit in the pruned recipe's time.\n\n"
                "| shape | params | pruned: seconds | perplexity after pruning | after healing | scratch: steps | "
                "seconds | perplexity | **scratch / pruned** |\n|---|---|---|---|---|---|---|---|---|\n"
                + "".join(f"| {r['shape']} | {r['params'] / 1e6:.1f} M | {r['pruned_seconds']:.0f} | "
                          f"{r['perplexity_after_pruning']:.0f} | {r['perplexity_pruned_healed']:.0f} | "
                          f"{r['scratch_steps']} | {r['scratch_seconds']:.0f} | {r['perplexity_scratch']:.0f} | "
                          f"**{r['ratio']:.0f}×** |\n" for r in rows))
        with open(Path(__file__).resolve().parent / "RESULTS.md", "a") as fh:
            fh.write(text)
        print("appended to RESULTS.md")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recipes", action="store_true", help="pruned-and-healed vs from-scratch students (issue 11)")
    ap.add_argument("--shapes", nargs="+", default=["L24", "L18", "L24-I768"])
    ap.add_argument("--heal-steps", type=int, default=10)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--block-size", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--append", action="store_true", help="append the result to benchmarks/RESULTS.md")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.recipes:
        return recipes(a)

    from transformers import Trainer, TrainerCallback, TrainingArguments, logging as hf_logging

    hf_logging.set_verbosity_error()
    train_lines, _ = zoo.load_corpus("gensim-lee")
    tok = zoo.train_subword_tokenizer(train_lines, vocab_size=8000)
    tok.eos_token = "[SEP]"
    blocks = distill.pack_blocks(train_lines, tok, block_size=a.block_size, objective="gpt2")
    shape = distill.student_shape(a.layers, a.hidden)
    cfg = distill.TrainConfig(steps=a.steps, batch_size=a.batch_size, lr=1e-3, warmup=0.1,
                              weight_decay=0.01, grad_clip=1.0, seed=0)
    tokens = a.steps * a.batch_size * a.block_size

    def _fastest(stamps: list[float]) -> float:
        """tokens/s of the fastest quarter of steps (step = time between consecutive step ends)."""
        d = sorted(b - a for a, b in zip(stamps[1:-1], stamps[2:]))     # first step (warm-up) excluded
        q = d[: max(1, len(d) // 4)]
        return a.batch_size * a.block_size / statistics.mean(q)

    def ours() -> tuple[float, float]:
        m = distill.build_student("gpt2", shape, tok, block_size=a.block_size, dropout=0.1, seed=0)
        stamps = [time.perf_counter()]
        distill.train(m, blocks, cfg, arch="gpt2", tokenizer=tok, progress=False,
                      callback=lambda step, loss: stamps.append(time.perf_counter()))
        return tokens / (stamps[-1] - stamps[0]), _fastest(stamps)

    class DS(torch.utils.data.Dataset):
        def __len__(self):
            return blocks.shape[0]

        def __getitem__(self, i):
            return {"input_ids": blocks[i], "labels": blocks[i]}

    def trainer() -> tuple[float, float]:
        m = distill.build_student("gpt2", shape, tok, block_size=a.block_size, dropout=0.1, seed=0)
        args = TrainingArguments(output_dir="/tmp/bench_training_trainer", max_steps=a.steps,
                                 per_device_train_batch_size=a.batch_size, learning_rate=1e-3,
                                 weight_decay=0.01, warmup_steps=int(0.1 * a.steps),
                                 lr_scheduler_type="linear", max_grad_norm=1.0, report_to="none",
                                 save_strategy="no", eval_strategy="no", disable_tqdm=True,
                                 use_cpu=True, seed=0)
        stamps = []

        class Stamp(TrainerCallback):
            def on_train_begin(self, *_, **__):
                stamps.append(time.perf_counter())

            def on_step_end(self, *_, **__):
                stamps.append(time.perf_counter())

        tr = Trainer(model=m, args=args, train_dataset=DS(), callbacks=[Stamp()])
        tr.train()
        return tokens / (stamps[-1] - stamps[0]), _fastest(stamps)

    res = {"ours": [], "trainer": []}
    load0 = os.getloadavg()[0]
    ours()  # warm-up (allocator, kernels), not timed
    for _ in range(a.repeats):
        res["ours"].append(ours())
        res["trainer"].append(trainer())
    wall = {k: [w for w, _ in v] for k, v in res.items()}
    cpu = {k: [c for _, c in v] for k, v in res.items()}   # fastest-quarter step throughput
    best = {k: max(v) for k, v in wall.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    ratio, ratio_cpu = best["ours"] / best["trainer"], med_cpu["ours"] / med_cpu["trainer"]
    load = max(load0, os.getloadavg()[0])
    print(f"student GPT-2 L{a.layers}-H{a.hidden} ({tok.__class__.__name__}, vocab {len(tok)}), "
          f"batch {a.batch_size} x {a.block_size} tokens, {a.steps} steps, {a.threads} threads")
    for k in res:
        print(f"  {k:8s} tokens/s wall: best {best[k]:6.0f} runs {[round(x) for x in wall[k]]}; "
              f"fastest-quarter steps: median {med_cpu[k]:6.0f} runs {[round(x) for x in cpu[k]]}")
    print(f"  ratio ours / Trainer: best wall {ratio:.2f}, fastest-quarter steps {ratio_cpu:.2f}   "
          f"(load average up to {load:.1f})")

    if a.append:
        cmd = "HARMS_CACHE_DIR=... .venv/bin/python benchmarks/bench_training.py " + " ".join(sys.argv[1:])
        text = (
            f"\n## Training\n\n"
            f"Command: `{cmd}`  \nDate: {dt.datetime.now().isoformat(timespec='minutes')}  \n"
            f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
            f"{a.threads} threads, load average up to {load:.1f} (cores shared with other jobs)  \n"
            f"Student GPT-2 L{a.layers}-H{a.hidden}, vocabulary {len(tok)}, batch {a.batch_size} x "
            f"{a.block_size} tokens, {a.steps} steps, {a.repeats} alternating runs each. The cores are shared "
            f"with other jobs, so wall-clock runs vary a lot: the table gives the best wall-clock run (least "
            f"interference) and, per run, the throughput of its fastest quarter of steps (median over runs; "
            f"the least disturbed steps, so less sensitive to the load).\n\n"
            f"| loop | tokens/s wall, best | wall runs | fastest-quarter steps, median | runs |\n"
            f"|---|---|---|---|---|\n"
            + "".join(f"| {k} | {best[k]:.0f} | {', '.join(str(round(x)) for x in wall[k])} | {med_cpu[k]:.0f} | "
                      f"{', '.join(str(round(x)) for x in cpu[k])} |\n" for k in res)
            + f"\nRatio ours / Trainer: **{ratio:.2f}** (best wall), **{ratio_cpu:.2f}** (fastest-quarter steps); "
              f"goal >= 1 (ours not slower).\n")
        path = Path(__file__).resolve().parent / "RESULTS.md"
        with open(path, "a") as fh:
            fh.write(text)
        print(f"appended to {path}")


if __name__ == "__main__":
    main()
