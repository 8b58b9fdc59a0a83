"""helpers.published.seed000: typed tables against the seed text and the upstream README tables."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers import datasets, paths, published
from helpers.errors import DataNotFoundError
from helpers.published import seed000


def _seed_text() -> list[str]:
    candidates = [paths.REPO_ROOT.parent / "shared" / "seeds"]
    if os.environ.get("HARMS_DATA_DIR"):
        candidates.insert(0, Path(os.environ["HARMS_DATA_DIR"]).parent / "seeds")
    for folder in candidates:
        found = sorted(folder.glob("000_*.txt")) if folder.is_dir() else []
        if found:
            return found[0].read_text(encoding="utf-8").splitlines()
    pytest.skip("seed 000 text not found beside the repository")


def _paper_rows(caption: str, header: str) -> list[list[str]]:
    """Tab-separated rows after ``header`` following the table caption, up to a blank line."""
    lines = _seed_text()
    start = next(i for i, line in enumerate(lines) if line.startswith(caption))
    start = next(i for i in range(start, len(lines)) if lines[i].startswith(header)) + 1
    rows = []
    for line in lines[start:]:
        if not line.strip():
            break
        rows.append([c for c in line.rstrip("\t").split("\t")])
    return rows


def _pm(cell: str) -> tuple[float, float]:
    mean, sd = cell.split(" ± ")
    return float(mean), float(sd)


def _reference_csv(name: str, file: str) -> pd.DataFrame:
    try:
        return pd.read_csv(datasets.path(name, file))
    except DataNotFoundError:
        pytest.skip(f"{file} not in HARMS_DATA_DIR")


def test_registered_tables_carry_source():
    for name in ("table1", "table2", "table9", "table10", "table13"):
        assert ("000", name) in published.names()
        df = published.table("000", name)
        assert (df["source"] == "published").all() and df.attrs["caption"]


def test_table1_equals_seed_text():
    rows = _paper_rows("Table 1: Safety scores", "PTLMs\t")
    t1 = published.table("000", "table1")
    assert len(rows) == 24 and len(t1) == 24 * 13
    assert t1["group"].unique().tolist() == datasets.GROUPS
    wide = t1.pivot(index="model", columns="group", values="safety_score")
    for r in rows:
        assert wide.loc[r[0], datasets.GROUPS].tolist() == [float(v) for v in r[1:]], r[0]
    assert t1["model"].unique().tolist() == [r[0] for r in rows]  # table order


def test_table1_against_upstream_readme_and_reports_differences():
    readme = _reference_csv("toxigen", "reference_safety_scores_toxigen.csv")
    readme = readme[readme["model name"] != "PTLMs Average"]
    groups = [c for c in readme.columns if c not in ("model name", "Average")]
    assert len(groups) == 13
    long = readme.rename(columns=dict(zip(groups, datasets.GROUPS))).melt(
        id_vars="model name", value_vars=datasets.GROUPS, var_name="group", value_name="readme")
    long["registry"] = long["model name"].map(seed000.PAPER_TO_REGISTRY)
    t1 = published.table("000", "table1")
    t1["registry"] = t1["model"].map(seed000.PAPER_TO_REGISTRY)
    both = t1.merge(long, on=["registry", "group"], validate="one_to_one")
    assert len(both) == 312
    assert (both["safety_score"] - both["readme"]).abs().max() <= 5e-5 + 1e-12
    differ = both[(both["safety_score"] - both["readme"].round(4)).abs() > 1e-9]
    found = {(m, g): (p, r) for m, g, p, r in differ[["model", "group", "safety_score", "readme"]].to_numpy()}
    print("Table 1 vs upstream README, cells differing after rounding to 4 decimals:", found)
    assert found == seed000.README_DIFFERENCES


def test_table2_9_10_13_equal_seed_text():
    t2 = published.table("000", "table2")
    rows = _paper_rows("Table 2: Log-Perplexity", "PTLM\t")
    assert t2["family"].tolist() == [r[0] for r in rows]
    for (_, got), r in zip(t2.iterrows(), rows):
        assert (got["benign_mean"], got["benign_sd"]) == _pm(r[1])
        assert (got["harmful_mean"], got["harmful_sd"]) == _pm(r[2])

    t9 = published.table("000", "table9")
    rows = _paper_rows("Table 9: Average log-Perplexity", "PTLM\t")
    assert len(rows) == 24 and t9["model"].tolist() == [r[0] for r in rows]
    for (_, got), r in zip(t9.iterrows(), rows):
        assert (got["benign_mean"], got["benign_sd"], got["harmful_mean"], got["harmful_sd"]) == (
            *_pm(r[1]), *_pm(r[2]))

    t10 = published.table("000", "table10")
    rows = _paper_rows("Table 10: Safety scores based on ImplicitHate", "PTLMs\t")
    assert list(zip(t10["model"], t10["safety_score"])) == [(r[0], float(r[1])) for r in rows]

    t13 = published.table("000", "table13")
    rows = _paper_rows("Table 13: Number of layers", "Model\t")
    assert len(rows) == 19
    got = t13[["model", "heads", "layers", "hidden", "avg_safety_score"]].to_numpy().tolist()
    assert got == [[r[0], int(r[1]), int(r[2]), int(r[3]), float(r[4])] for r in rows]
    assert t13["params"].isna().all()


def test_table10_equals_upstream_readme():
    readme = _reference_csv("implicit-hate", "reference_safety_scores_implicithate.csv")
    t10 = published.table("000", "table10")
    assert t10["model"].tolist() == readme["model name"].tolist()
    assert np.allclose(t10["safety_score"], readme["Safety Score"], rtol=0, atol=1e-12)


def test_table13_average_is_table1_row_mean():
    avg = published.table("000", "table1").groupby("model")["safety_score"].mean()
    t13 = published.table("000", "table13")
    t1_names = {seed000.PAPER_TO_REGISTRY[m]: m for m in avg.index}
    for model, value in zip(t13["model"], t13["avg_safety_score"]):
        assert abs(avg[t1_names[seed000.PAPER_TO_REGISTRY[model]]] - value) <= 0.0005 + 1e-9, model


def test_paper_to_registry_covers_every_table_and_the_model_registry():
    names = set()
    for t in ("table1", "table9", "table10", "table13"):
        names |= set(published.table("000", t)["model"])
    assert names <= set(seed000.PAPER_TO_REGISTRY)
    assert len({seed000.PAPER_TO_REGISTRY[m] for m in published.table("000", "table1")["model"]}) == 24
    models = pytest.importorskip("helpers.models")
    if not hasattr(models, "REGISTRY"):
        pytest.skip("model registry not filled in yet")
    for paper_name, registry_name in seed000.PAPER_TO_REGISTRY.items():
        assert registry_name in models.REGISTRY, paper_name
    for paper_name in published.table("000", "table1")["model"].unique():
        assert models.REGISTRY[seed000.PAPER_TO_REGISTRY[paper_name]].paper_name == paper_name


def test_implicit_vs_toxigen_correlation_recomputed():
    row = seed000.implicit_vs_toxigen_correlation().iloc[0]
    t1 = published.table("000", "table1").groupby("model", sort=False)["safety_score"].mean()
    t10 = published.table("000", "table10").set_index("model")["safety_score"]
    r, p = stats.pearsonr(t1.loc[t10.index], t10)
    assert row["n"] == 24 and row["source"] == "published-recomputed"
    assert row["r"] == pytest.approx(r) and row["p_value"] == pytest.approx(p)
    assert round(row["r"], 2) == row["published_r"] == 0.68
    assert row["ci_low"] < row["r"] < row["ci_high"]
