"""Training throughput: helpers.distill.train vs transformers.Trainer (issue 4).

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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

    from transformers import Trainer, TrainerCallback, TrainingArguments, logging as hf_logging

    hf_logging.set_verbosity_error()
    train_lines, _ = zoo.load_corpus("gensim-lee")
    tok = zoo.train_subword_tokenizer(train_lines, vocab_size=8000)
    tok.eos_token = "[SEP]"
    blocks = distill.pack_blocks(train_lines, tok, block_size=a.block_size, arch="gpt2")
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
