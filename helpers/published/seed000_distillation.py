"""Seed 000 (Hosseini et al. 2023), section 4.7 and appendix A.5: distilled models.

Typed from the paper text (../shared/seeds/000_*.txt), long/tidy format.

- table6: Distilled-BERT (Turc et al. 2019 miniature BERTs) and teacher BERT-large-uncased:
  layers, hidden, heads (= hidden / 64), safety_score, teacher.
- table7: Distilled-GPT-2 students and teacher GPT-2 (L=12, H=768); the teacher's score is not
  printed separately: the paper's L=12, H=768 cell is the teacher's own shape (Table 14's
  last line "is the original GPT-2 model (teacher)"), so that cell is flagged teacher=True.
- table8: Pearson r of the average safety score with #heads, #layers, hidden size.
- table14: few-shot perplexity on WikiText-2, WikiText-103, LAMBADA, PTB (long: one row per
  model x benchmark); last line = the teacher.
- table15: few-shot perplexity averaged over the 4 benchmarks; the paper text has only the
  rows H=128, 256, 512 (no H=768 row is printed). Its values are not the plain row means of
  Table 14 (e.g. L=2, H=128: Table 15 172.28, mean of Table 14 179.95).
"""

from __future__ import annotations

import pandas as pd

from helpers.published import register

_T6_LAYERS = [2, 4, 6, 8, 10, 12]
_T6 = {128: [0.307, 0.317, 0.320, 0.316, 0.320, 0.322],
       256: [0.308, 0.311, 0.312, 0.313, 0.311, 0.309],
       512: [0.305, 0.304, 0.304, 0.298, 0.298, 0.299],
       768: [0.301, 0.293, 0.293, 0.286, 0.285, 0.283]}
_T7 = {128: [0.267, 0.278, 0.302, 0.296, 0.306, 0.309],
       256: [0.286, 0.280, 0.361, 0.351, 0.375, 0.343],
       512: [0.302, 0.293, 0.303, 0.332, 0.316, 0.328],
       768: [0.326, 0.313, 0.355, 0.320, 0.309, 0.289]}


def _grid(values: dict, family: str, teacher_cell: tuple[int, int] | None) -> list[dict]:
    return [{"family": family, "layers": l, "hidden": h, "heads": h // 64, "safety_score": v,
             "teacher": (l, h) == teacher_cell}
            for h, row in values.items() for l, v in zip(_T6_LAYERS, row)]


@register("000", "table6", "Safety scores of the Distilled-BERT models (Turc et al. 2019) and their "
          "teacher BERT-large-uncased (L=24, H=1024); heads = H/64")
def table6() -> pd.DataFrame:
    rows = _grid(_T6, "Distilled-BERT", None)
    for r in rows:
        r["model"] = f"google/bert_uncased_L-{r['layers']}_H-{r['hidden']}_A-{r['heads']}"
    rows.append({"family": "Distilled-BERT", "layers": 24, "hidden": 1024, "heads": 16, "safety_score": 0.303,
                 "teacher": True, "model": "BERT-large-uncased"})
    return pd.DataFrame(rows)[["model", "family", "layers", "hidden", "heads", "safety_score", "teacher"]]


@register("000", "table7", "Safety scores of the Distilled-GPT-2 students and teacher GPT-2 (L=12, H=768); "
          "heads = H/64")
def table7() -> pd.DataFrame:
    rows = _grid(_T7, "Distilled-GPT2", (12, 768))
    for r in rows:
        r["model"] = "GPT-2" if r["teacher"] else f"Distilled-GPT2-L{r['layers']}-H{r['hidden']}"
    return pd.DataFrame(rows)[["model", "family", "layers", "hidden", "heads", "safety_score", "teacher"]]


@register("000", "table8", "Pearson correlation between average safety score and architecture "
          "in distilled PTLMs")
def table8() -> pd.DataFrame:
    vals = {"Distilled-BERT": (-0.92, -0.10, -0.92), "Distilled-GPT2": (-0.38, 0.35, -0.38)}
    return pd.DataFrame([{"family": f, "x": x, "y": "safety_score", "r": r}
                         for f, rs in vals.items() for x, r in zip(("heads", "layers", "hidden"), rs)])


_T14 = """2 2 128 6.96 98.12 202.96878 265.38 153.35
4 2 256 14.71 66.03 131.50 216.40 100.13
8 2 512 32.56 42.46 73.30 174.30 62.02
12 2 768 53.56 32.30 52.17 117.23 45.15
2 4 128 7.36 88.53 180.28 259.79 146.83
4 4 256 16.29 48.68 86.34 160.85 74.81
8 4 512 38.87 32.48 53.09 113.74 47.49
12 4 768 67.74 26.25 40.82 92.34 36.31
2 6 128 7.75 71.74 135.60 212.09 117.54
4 6 256 17.87 40.98 69.68 142.71 63.13
8 6 512 45.17 28.30 44.80 91.22 39.84
12 6 768 81.91 23.85 36.32 82.06 32.26
2 8 128 8.15 65.90 116.47 188.44 107.24
4 8 256 19.45 38.30 63.97 131.82 58.17
8 8 512 51.48 26.30 41.01 90.80 36.51
12 8 768 96.09 22.64 34.08 78.05 30.04
2 10 128 8.55 63.57 113.63 191.38 104.57
4 10 256 21.03 36.16 59.78 130.51 53.98
8 10 512 57.78 25.14 38.96 87.68 34.22
12 10 768 110.26 22.08 32.87 74.78 29.01
2 12 128 8.94 60.88 107.03 186.09 102.09
4 12 256 22.61 34.76 56.85 114.84 51.21
8 12 512 64.09 24.46 37.39 81.45 33.00
12 12 768 117.00 15.75 21.86 44.79 22.85"""
_BENCH = ["WikiText2", "WikiText103", "LAMBADA", "PTB"]


@register("000", "table14", "Few-shot perplexity of the distilled GPT-2 models on 4 language-modelling "
          "benchmarks (last line: the teacher GPT-2)")
def table14() -> pd.DataFrame:
    rows = []
    for line in _T14.splitlines():
        v = line.split()
        heads, layers, hidden = int(v[0]), int(v[1]), int(v[2])
        for b, p in zip(_BENCH, v[4:]):
            rows.append({"heads": heads, "layers": layers, "hidden": hidden, "params_million": float(v[3]),
                         "benchmark": b, "perplexity": float(p), "teacher": (layers, hidden) == (12, 768)})
    return pd.DataFrame(rows)


_T15 = {128: [172.28, 168.86, 134.24, 119.51, 118.28, 114.02],
        256: [128.52, 92.67, 79.13, 73.07, 75.48, 64.41],
        512: [88.02, 61.70, 51.04, 48.66, 46.50, 44.07]}


@register("000", "table15", "Few-shot perplexity averaged over the 4 benchmarks, distilled GPT-2 "
          "(teacher GPT-2 L=12, H=768); the paper prints no H=768 row")
def table15() -> pd.DataFrame:
    return pd.DataFrame([{"layers": l, "hidden": h, "heads": h // 64, "perplexity": v}
                         for h, row in _T15.items() for l, v in zip(_T6_LAYERS, row)])


def recompute_table8(selection: str = "students") -> pd.DataFrame:
    """Table 8 recomputed from the published Tables 6 and 7 (source="published-recomputed").

    ``selection``: "students" (the 24 students of each table; GPT-2's L=12,H=768 cell, the
    teacher's shape, excluded) or "all" (teachers included). The paper selected "models with
    reasonable downstream task performance" without listing them, so neither need match.
    """
    from helpers.stats import correlation_table

    out = []
    for fam, df in (("Distilled-BERT", table6()), ("Distilled-GPT2", table7())):
        if selection == "students":
            df = df[~df["teacher"]]
        t = correlation_table(df, ["heads", "layers", "hidden"], "safety_score")
        t.insert(0, "family", fam)
        t["selection"] = selection
        out.append(t)
    res = pd.concat(out, ignore_index=True)
    res["source"] = "published-recomputed"
    return res
