"""helpers.published: the CSV tables against the seed text and the upstream README tables; the loader;
helpers.published.recompute against independent computations."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers import datasets, paths, published
from helpers.errors import DataNotFoundError, HarmsError
from helpers.published import recompute

NAMES = published.registry_names("000")

#: Table 1 cells that differ from the upstream README table (5-6 decimals) rounded to 4:
#: (paper model, group) -> (paper value, README value). All three README values end in
#: 5 at the fifth decimal, so the paper rounded the unrounded score, which the README
#: truncates; the other 309 cells agree, and every cell is within 0.00005.
README_DIFFERENCES = {
    ("ELECTRA-large-generator", "physical dis"): (0.2337, 0.23375),
    ("BERT-large-cased", "women"): (0.2065, 0.20645),
    ("GPT-2", "women"): (0.2323, 0.23225),
}


def _seed_text(paper: str = "000") -> list[str]:
    # the papers' texts sit in a seeds/ folder beside the data directory (HARMS_DATA_DIR) where a
    # machine has them; elsewhere the tests that read them skip
    candidates = [d.parent / "seeds" for d in paths.data_dirs()]
    for folder in candidates:
        found = sorted(folder.glob(f"{paper}_*.txt")) if folder.is_dir() else []
        if found:
            return found[0].read_text(encoding="utf-8").splitlines()
    pytest.skip(f"the text of paper {paper} is not beside the data directory")


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
    long["registry"] = long["model name"].map(NAMES)
    t1 = published.table("000", "table1")
    t1["registry"] = t1["model"].map(NAMES)
    both = t1.merge(long, on=["registry", "group"], validate="one_to_one")
    assert len(both) == 312
    assert (both["safety_score"] - both["readme"]).abs().max() <= 5e-5 + 1e-12
    differ = both[(both["safety_score"] - both["readme"].round(4)).abs() > 1e-9]
    found = {(m, g): (p, r) for m, g, p, r in differ[["model", "group", "safety_score", "readme"]].to_numpy()}
    print("Table 1 vs upstream README, cells differing after rounding to 4 decimals:", found)
    assert found == README_DIFFERENCES


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
    t1_names = {NAMES[m]: m for m in avg.index}
    for model, value in zip(t13["model"], t13["avg_safety_score"]):
        assert abs(avg[t1_names[NAMES[model]]] - value) <= 0.0005 + 1e-9, model


def test_paper_to_registry_covers_every_table_and_the_model_registry():
    names = set()
    for t in ("table1", "table9", "table10", "table13"):
        names |= set(published.table("000", t)["model"])
    assert names <= set(NAMES)
    assert len({NAMES[m] for m in published.table("000", "table1")["model"]}) == 24
    models = pytest.importorskip("helpers.models")
    if not hasattr(models, "REGISTRY"):
        pytest.skip("model registry not filled in yet")
    for paper_name, registry_name in NAMES.items():
        assert registry_name in models.REGISTRY, paper_name
    for paper_name in published.table("000", "table1")["model"].unique():
        assert models.REGISTRY[NAMES[paper_name]].paper_name == paper_name


def test_implicit_vs_toxigen_correlation_recomputed():
    row = recompute.implicit_vs_toxigen_correlation().iloc[0]
    t1 = published.table("000", "table1").groupby("model", sort=False)["safety_score"].mean()
    t10 = published.table("000", "table10").set_index("model")["safety_score"]
    r, p = stats.pearsonr(t1.loc[t10.index], t10)
    assert row["n"] == 24 and row["source"] == "published-recomputed"
    assert row["r"] == pytest.approx(r) and row["p_value"] == pytest.approx(p)
    assert round(row["r"], 2) == row["published_r"] == 0.68
    assert row["ci_low"] < row["r"] < row["ci_high"]


# --------------------------------------------------------------------------- the loader and its files

def test_index_lists_every_csv_and_they_ship_as_package_data():
    import importlib.resources
    import tomllib

    root = importlib.resources.files("helpers.published")
    index = pd.read_csv(root.joinpath("tables.csv").open(), dtype=str)
    assert list(index.columns) == ["paper", "table", "file", "caption", "citation", "notes"]
    assert not index.duplicated(["paper", "table"]).any()
    for paper, name, file in index[["paper", "table", "file"]].to_numpy():
        assert root.joinpath(file).is_file(), file
        assert (paper, name) in published.names()
    on_disk = {f"seed000/{p.name}" for p in root.joinpath("seed000").iterdir() if p.name.startswith("table")}
    assert on_disk == set(index.loc[index["paper"] == "000", "file"])
    assert root.joinpath("seed000", "model_names.csv").is_file()
    pyproject = tomllib.loads((paths.REPO_ROOT / "pyproject.toml").read_text())
    assert "**/*.csv" in pyproject["tool"]["setuptools"]["package-data"]["helpers"]


def test_table_attrs_unknown_names_and_copies():
    t = published.table("000", "Table 1")  # spelling normalised
    assert t.attrs["table"] == "seed 000 table1" and "arXiv:2301.09211" in t.attrs["citation"]
    assert t.attrs["caption"] == published.caption(0, "table1")
    assert t.attrs["citation"] == published.citation("000", "table1")
    t.loc[0, "safety_score"] = -1.0  # a caller's change never reaches the next caller
    assert published.table("000", "table1").loc[0, "safety_score"] == 0.3904
    for bad in (("000", "table99"), ("042", "table1")):
        with pytest.raises(HarmsError, match="no published table") as exc:
            published.table(*bad)
        assert "\n" not in str(exc.value) and "000/table1" in str(exc.value)
    with pytest.raises(HarmsError, match="no model-name table for paper 042"):
        published.registry_names("42")


# --------------------------------------------------------------------------- tables 3-8, 11, 12, 14, 15

PAPER_SPELLING = {"Ours (ToxiGen)": "Safety score", "Safety Score (ToxiGen)": "Safety score", "HateBert": "HateBERT",
                  "GPT2": "GPT-2", "ELECTRA": "ELECTRA-generator", "#Heads": "heads", "#Layers": "layers",
                  "Hidden Dim": "hidden"}


def _header_and_rows(caption: str, header: str) -> tuple[list[str], list[list[str]]]:
    lines = _seed_text()
    start = next(i for i, line in enumerate(lines) if line.startswith(caption))
    head = next(lines[i] for i in range(start, len(lines)) if lines[i].startswith(header))
    return head.rstrip("\t").split("\t"), _paper_rows(caption, header)


def _correlations(caption: str) -> set[tuple[str, str, float]]:
    """(column, row, r) of a printed lower-triangular correlation table, diagonal dropped."""
    head, rows = _header_and_rows(caption, "\t")
    out = set()
    for r in rows:
        for col, cell in zip(head[1:], r[1:]):
            if cell and col != r[0]:
                out.add((PAPER_SPELLING.get(col, col), PAPER_SPELLING.get(r[0], r[0]), float(cell)))
    return out


def test_tables_3_4_equal_seed_text():
    for name, caption in (("table3", "Table 3: PCC"), ("table4", "Table 4: PCC")):
        t = published.table("000", name)
        assert set(zip(t["x"], t["y"], t["r"])) == _correlations(caption) and t[["x", "y"]].value_counts().max() == 1


def test_tables_5_8_equal_seed_text():
    for name, caption, y in (("table5", "Table 5: PCC", "avg_safety_score"),
                             ("table8", "Table 8: PCC", "safety_score")):
        t = published.table("000", name)
        assert (t["y"] == y).all()
        expected = {(fam, x, r) for x, fam, r in _correlations(caption)}
        assert set(zip(t["family"], t["x"], t["r"])) == expected and len(t) == len(expected)


def _grid(caption: str) -> dict[tuple[int, int], float]:
    """(layers, hidden) -> value of a printed H x L grid (Tables 6, 7, 15)."""
    head, rows = _header_and_rows(caption, "\tL=2")
    layers = [int(c.split("=")[1]) for c in head[1:]]
    return {(l, int(r[0].replace(" ", "").split("=")[1])): float(v)
            for r in rows for l, v in zip(layers, r[1:]) if v}


def test_tables_6_7_equal_seed_text():
    for name, caption, teacher in (("table6", "Table 6: Safety scores", (24, 1024)),
                                   ("table7", "Table 7: Safety scores", (12, 768))):
        t = published.table("000", name)
        assert dict(zip(zip(t["layers"], t["hidden"]), t["safety_score"])) == _grid(caption)
        assert len(t) == (24 if name == "table7" else 25)
        assert (t["heads"] == t["hidden"] // 64).all()
        assert t.loc[t["teacher"], ["layers", "hidden"]].apply(tuple, axis=1).tolist() == [teacher]


def test_tables_11_12_equal_seed_text_with_group_keys():
    groups = datasets.group_table()
    key = dict(zip(groups["label"], groups["group"]))
    key |= {p: g for p, g in zip(groups["paper_label"], groups["group"]) if p}
    for name, caption, value in (("table11", "Table 11: Regard", "regard_score"),
                                 ("table12", "Table 12: Safety scores", "safety_score")):
        head, rows = _header_and_rows(caption, "PTLMs\t")
        expected = {(r[0].replace("GPT-2-x1", "GPT-2-xl"), key[g], float(v))
                    for r in rows for g, v in zip(head[1:], r[1:])}
        t = published.table("000", name)
        assert set(zip(t["model"], t["group"], t[value])) == expected and len(t) == 7 * 14
        assert t["group"].unique().tolist() == list(datasets.group_subjects())  # the regard prompts' groups
        assert set(t["model"]) <= set(NAMES)


def test_tables_14_15_equal_seed_text():
    head, rows = _header_and_rows("Table 14: Few-shot", "#Attention Heads")
    t14 = published.table("000", "table14")
    bench = {"LAMBDA": "LAMBADA"}
    expected = {(int(float(r[0])), int(float(r[1])), int(float(r[2])), float(r[3]), bench.get(b, b), float(v))
                for r in rows for b, v in zip(head[4:], r[4:])}
    cols = ["heads", "layers", "hidden", "params_million", "benchmark", "perplexity"]
    got = set(t14[cols].itertuples(index=False, name=None))
    assert got == expected and len(t14) == 24 * 4
    assert t14.loc[t14["teacher"], ["layers", "hidden"]].drop_duplicates().to_numpy().tolist() == [[12, 768]]
    t15 = published.table("000", "table15")
    # the first transcription had no H=768 row although the paper prints one
    assert dict(zip(zip(t15["layers"], t15["hidden"]), t15["perplexity"])) == _grid("Table 15: Few-shot")
    assert len(t15) == 24
    assert (t15["heads"] == t15["hidden"] // 64).all()


# --------------------------------------------------------------------------- recomputations

def test_table15_is_the_row_mean_of_table14_except_two_cells():
    """Issue 25: the book said Table 15 prints only H = 128/256/512 and that its cells are not the
    means of Table 14. Recomputed here from the seed's text itself: 22 of 24 cells are."""
    head, rows = _header_and_rows("Table 14: Few-shot", "#Attention Heads")
    means = {(int(float(r[1])), int(float(r[2]))): sum(float(v) for v in r[4:]) / len(r[4:]) for r in rows}
    printed = _grid("Table 15: Few-shot")
    off = {k for k, v in printed.items() if abs(v - means[k]) > 0.01}
    assert off == {(2, 128), (10, 256)} and len(printed) == 24
    out = recompute.recompute_table15()
    assert set(zip(out.loc[~out["equal"], "layers"], out.loc[~out["equal"], "hidden"])) == off
    assert out["table14_mean"].tolist() == pytest.approx([means[k] for k in zip(out["layers"], out["hidden"])])
    assert sorted(out["hidden"].unique()) == [128, 256, 512, 768]


def test_recompute_table5_from_table1_averages_equals_paper():
    out = recompute.recompute_table5(from_table="table1")
    t1 = published.table("000", "table1")
    avg = t1.groupby(t1["model"].map(NAMES))["safety_score"].mean()
    t13 = published.table("000", "table13")
    for (fam, x), row in out.set_index(["family", "x"]).iterrows():
        sub = t13[t13["family"] == fam]
        r, p = stats.pearsonr(sub[x], sub["model"].map(NAMES).map(avg))
        assert row["r"] == pytest.approx(r) and row["p_value"] == pytest.approx(p) and row["n"] == len(sub)
    assert (out["r"].round(2) == out["r_published"]).all() and len(out) == 9
    assert (out["source"] == "published-recomputed").all()
    printed = recompute.recompute_table5(from_table="table13")
    assert (printed["r"].round(2) != printed["r_published"]).any()  # 3-decimal averages do not reproduce it
    with pytest.raises(ValueError, match="from_table"):
        recompute.recompute_table5(from_table="table2")


@pytest.mark.parametrize("selection", ["students", "all"])
def test_recompute_table8_equals_pearson_of_tables_6_7(selection):
    out = recompute.recompute_table8(selection).set_index(["family", "x"])
    for fam, name in (("Distilled-BERT", "table6"), ("Distilled-GPT2", "table7")):
        t = published.table("000", name)
        if selection == "students":
            t = t[~t["teacher"]]
        for x in ("heads", "layers", "hidden"):
            assert out.loc[(fam, x), "r"] == pytest.approx(stats.pearsonr(t[x], t["safety_score"])[0])
            assert out.loc[(fam, x), "n"] == len(t) and out.loc[(fam, x), "selection"] == selection


# --------------------------------------------------------------------------- seed 003 (Potala et al.)

SEED003 = ("table1", "table2", "table3", "table4", "table5", "table6", "table7", "table8", "table9",
           "seat_aggregate", "cb_score", "bec_pro_groups", "ethnic_examples")
MODEL_003 = {"Bert": "BERT-base", "TinyBERT": "TinyBERT"}


def _rows_before(caption: str) -> tuple[list[str], list[list[str]]]:
    """Header and tab-separated rows of the seed 003 table printed above the line starting with
    ``caption`` (its tables stand above their captions)."""
    lines = _seed_text("003")
    end = next(i for i, line in enumerate(lines) if line.strip().startswith(caption))
    rows = []
    for line in reversed(lines[:end]):
        if not rows and not line.strip():
            continue
        cells = line.rstrip("\t").split("\t")
        if cells[0] == "Metric":
            return cells, rows[::-1]
        rows.append(cells)
    raise AssertionError(f"no table above {caption!r}")


def _prose_003() -> str:
    return " ".join(" ".join(_seed_text("003")).split())


def test_seed003_index_lists_every_file_with_its_citation():
    import importlib.resources

    root = importlib.resources.files("helpers.published")
    on_disk = {f"seed003/{p.name}" for p in root.joinpath("seed003").iterdir() if p.name.endswith(".csv")}
    assert on_disk == {f"seed003/{name}.csv" for name in SEED003}
    assert [n for p, n in published.names() if p == "003"] == sorted(SEED003)
    for name in SEED003:
        t = published.table("003", name)
        assert (t["source"] == "published").all() and t.attrs["caption"].startswith("Seed 003 ")
        assert t.attrs["citation"].startswith("Hema Deva Sagar Potala") and "Knowledge Distilled Model" in t.attrs["citation"]
        assert t.attrs["notes"].startswith("Typed from the paper text (Potala et al.: Explore Bias in Knowledge Distilled Model")
        assert not t["value" if "value" in t else "probability"].isna().any()


@pytest.mark.parametrize("name,caption", [("table1", "Table 1:"), ("table2", "Table 2:"), ("table3", "Table 3:")])
def test_seed003_tables_1_3_equal_seed_text(name, caption):
    head, rows = _rows_before(caption)
    assert head == ["Metric", "Bert", "TinyBERT"]
    expected = {(MODEL_003[m], r[0], float(v)) for r in rows for m, v in zip(head[1:], r[1:])}
    t = published.table("003", name)
    assert set(zip(t["model"], t["metric"], t["value"])) == expected and len(t) == len(expected) == 10


def test_seed003_table4_equals_seed_text():
    head, rows = _rows_before("Table 4:")
    assert head == ["Metric", "Bert", "TinyBERT", "% diff"] and len(rows) == 5
    expected = set()
    for metric, b, s, d in rows:
        expected |= {("BERT-base", metric, "value", float(b)), ("TinyBERT", metric, "value", float(s)),
                     ("TinyBERT", metric, "% diff", float(d.rstrip("%")))}
    t = published.table("003", "table4")
    assert set(zip(t["model"], t["metric"], t["statistic"], t["value"])) == expected and len(t) == 15


def test_seed003_table5_equals_seed_text():
    head, rows = _rows_before("Table 5:")
    expected = set()
    for label, b, s in rows:
        term_set, metric = (x.strip() for x in label.split(":"))
        expected |= {("BERT-base", term_set, metric.lower(), float(b)), ("TinyBERT", term_set, metric.lower(), float(s))}
    t = published.table("003", "table5")
    assert set(zip(t["model"], t["term_set"], t["metric"], t["value"])) == expected and len(t) == 12


@pytest.mark.parametrize("name", ["table6", "table7", "table8", "table9"])
def test_seed003_tables_6_9_equal_seed_text(name):
    import re

    number = name[-1]
    head, rows = _rows_before(f"Table {number}:")
    assert head == ["Metric", "Female", "Male"] and len(rows) == 8
    expected = {(g, r[0], float(v)) for r in rows for g, v in zip(head[1:], r[1:])}
    test = re.search(rf"Table {number}:.*?Statistic: ([\d.]+), p: ([\d.e+-]+), effect size r: ([\d.]+)", _prose_003())
    for metric, v in zip(("Wilcoxon statistic", "p", "effect size r"), test.groups()):
        expected.add(("Female vs Male", metric, float(v)))
    t = published.table("003", name)
    assert set(zip(t["group"], t["metric"], t["value"])) == expected and len(t) == 19


def test_seed003_seat_cb_bec_pro_and_examples_equal_seed_text():
    import re

    text = _prose_003()
    seat = {}
    for tests, start in (("all tests", "Below are the aggregate effect size"), ("p < 0.01", "p_value < 0.01"),
                         ("p < 0.10", "p_value < 0.10")):
        chunk = text[text.index(start):]
        for task, pattern in (("hate speech", "hate speech model: ([\\d.]+)"), ("sentiment", "IMDB model: ([\\d.]+)")):
            b, s = re.findall(r"(?:BERT|TinyBERT) " + pattern, chunk)[:2]
            seat |= {(task, "BERT-base", tests): float(b), (task, "TinyBERT", tests): float(s)}
    t = published.table("003", "seat_aggregate")
    assert dict(zip(zip(t["task"], t["model"], t["tests"]), t["value"])) == seat and len(t) == 12

    cb = dict(zip([("hate speech", "BERT-base"), ("hate speech", "TinyBERT"), ("sentiment", "BERT-base"),
                   ("sentiment", "TinyBERT")], map(float, re.findall(r"CB [Ss]core (?:of )?[a-z ]+model = (?:\d{3} )?([\d.]+)", text))))
    t = published.table("003", "cb_score")
    assert dict(zip(zip(t["task"], t["model"]), t["value"])) == cb and len(cb) == 4

    # the text's line number 350 stands glued inside the first range: "(88.3%-35098.7%)"
    ranges = re.findall(r"participation \(([\d.]+)%-(?:350)?([\d.]+)%\)", text)
    ranges += re.findall(r"distribution of male and female employees \(([\d.]+)%-([\d.]+)%\)", text)
    t = published.table("003", "bec_pro_groups").set_index(["profession_group", "metric"])["value"]
    got = [(t[(g, "female participation min (%)")], t[(g, "female participation max (%)")]) for g in
           ("female", "male", "balanced")]
    assert got == [tuple(map(float, r)) for r in ranges] and (t.xs("professions", level="metric") == 20).all()
    assert "three groups of 20 professions each" in text

    found = re.findall(r"(\d)\. (\w+) \(([\d.]+)\)", text)
    spelled = {"Svria": "Syria", "Irag": "Iraq"}
    t = published.table("003", "ethnic_examples")
    assert set(zip(t["rank"], t["word"], t["probability"])) == {(int(r), spelled.get(w, w), float(p)) for r, w, p in found}
    assert len(t) == len(found) == 6


# seed 003: derived numbers recomputed from the numbers printed beside them

@pytest.mark.parametrize("name", [
    "table1", "table3",
    pytest.param("table2", marks=pytest.mark.xfail(strict=True, reason=(
        "seed 003 Table 2 is not one binary confusion matrix: F1 is not 2PR/(P+R) of the printed precision and "
        "recall (BERT-base 0.8874 vs 0.8838, TinyBERT 0.8350 vs 0.8098) and F1 - weighted is not the implied "
        "class-weighted F1 (0.8838 vs 0.8791, 0.8088 vs 0.7851)"))),
])
def test_seed003_f1_follows_from_precision_recall_accuracy(name):
    out = recompute.seed003_classifier_metrics(name)
    t = published.table("003", name).set_index(["model", "metric"])["value"]
    for _, row in out.iterrows():
        p, r = t[(row["model"], "Precision")], t[(row["model"], "Recall")]
        assert row["f1_low"] <= 2 * p * r / (p + r) <= row["f1_high"]
    assert (out["source"] == "published-recomputed").all() and len(out) == 2
    assert out["f1_follows"].all() and out["weighted_f1_follows"].all()


def test_seed003_table2_discrepancy_and_positive_shares():
    out = {(r["table"], r["model"]): r for name in ("table1", "table2", "table3")
           for _, r in recompute.seed003_classifier_metrics(name).iterrows()}
    t2b, t2s = out[("table2", "BERT-base")], out[("table2", "TinyBERT")]
    assert round(t2b["f1_low"], 4) == 0.8873 and round(t2s["f1_low"], 4) == 0.8349  # printed 0.8838, 0.8098
    assert round(t2b["weighted_f1_low"], 4) == 0.8837 and round(t2s["weighted_f1_low"], 4) == 0.8087  # printed 0.8791, 0.7851
    # the implied share of positives: MLMA's test set mostly hateful, the madlibs balanced
    assert round(out[("table1", "BERT-base")]["positive_share"], 3) == round(out[("table1", "TinyBERT")]["positive_share"], 3) == 0.876
    assert round(out[("table3", "BERT-base")]["positive_share"], 3) == round(out[("table3", "TinyBERT")]["positive_share"], 3) == 0.5


def test_seed003_table4_pct_diff_is_relative_to_the_teacher():
    out = recompute.seed003_pct_diff()
    t = published.table("003", "table4")
    values = t[t["statistic"] == "value"].pivot(index="metric", columns="model", values="value")
    for _, row in out.iterrows():
        b, s = values.loc[row["metric"], "BERT-base"], values.loc[row["metric"], "TinyBERT"]
        assert row["pct_diff"] == pytest.approx((s - b) / b * 100)
        assert row["low"] <= (s - b) / b * 100 <= row["high"]
    # (student - teacher) / teacher x 100 reaches every printed % diff from unrounded inputs ...
    assert out["within_rounding"].all() and len(out) == 5
    # ... but from the printed 2-decimal values it rounds differently for two metrics
    differ = out[out["pct_diff_rounded"] != out["pct_diff_published"]]
    assert dict(zip(differ["metric"], zip(differ["pct_diff_published"], differ["pct_diff_rounded"]))) == {
        "false positive eq. diff": (13.0, 14.0), "false negative eq. diff": (-6.0, -7.0)}
    # dividing by the student's value does not reproduce it
    assert not recompute.seed003_pct_diff("student")["within_rounding"].all()
    with pytest.raises(ValueError, match="denominator"):
        recompute.seed003_pct_diff("mean")
    # the text: "for 3 out of 5 metrics stated, TinyBERT seems to be better than Bert"
    assert (out["pct_diff_published"] < 0).sum() == (out["student"] < out["teacher"]).sum() == 3


def test_seed003_table5_absolute_bias_bounds_total_bias():
    t = published.table("003", "table5").pivot(index=["model", "term_set"], columns="metric", values="value")
    assert (t["absolute bias"] >= t["total bias"].abs()).all() and len(t) == 6
    absolute = t["absolute bias"].unstack("term_set")
    # the text: "pro set has the least bias"; "TinyBERT in general has lesser bias than BERTbase"
    assert (absolute.idxmin(axis=1) == "Pro").all()
    assert (absolute.loc["TinyBERT"] < absolute.loc["BERT-base"]).all()
    total = t["total bias"].abs().unstack("term_set")
    assert set(total.columns[total.loc["TinyBERT"] > total.loc["BERT-base"]]) == {"Pro", "WEAT"}


@pytest.mark.parametrize("name", ["table6", "table7", "table8", "table9"])
def test_seed003_tables_6_9_summaries_are_consistent(name):
    t = published.table("003", name)
    for group in ("Female", "Male"):
        v = t[t["group"] == group].set_index("metric")["value"]
        assert v["count"] == 1800
        assert v["min"] <= v["25%"] <= v["50%"] <= v["75%"] <= v["max"] and v["min"] <= v["mean"] <= v["max"]
        assert v["std"] <= (v["max"] - v["min"]) / 2 * np.sqrt(1800 / 1799)


def test_seed003_wilcoxon_printed_r_is_w_over_sqrt_n():
    out = recompute.seed003_wilcoxon()
    assert (out["n"] == 1800).all() and len(out) == 4
    assert np.allclose(out["r_published"], out["statistic"] / np.sqrt(1800), rtol=1e-15, atol=0)
    assert (out["r_published"] == out["w_over_sqrt_n"]).all()
    mean, sd = 1800 * 1801 / 4, np.sqrt(1800 * 1801 * 3601 / 24)
    assert np.allclose(out["z"], (out["statistic"] - mean) / sd)
    assert out["r"].round(3).tolist() == [-0.618, -0.548, -0.738, -0.187]
    # the text: TinyBERT's effect size "is better" than BERT's; |Z|/sqrt(N) agrees (and W/sqrt(N) grows as |Z| falls)
    r = out.set_index(["task", "model"])["r"].abs()
    assert r[("hate speech", "TinyBERT")] < r[("hate speech", "BERT-base")]
    assert r[("sentiment", "TinyBERT")] < r[("sentiment", "BERT-base")]


@pytest.mark.xfail(strict=True, reason="seed 003 Tables 6-9 print 'effect size r' = W / sqrt(N) (5477.96 ... 14976.76), "
                                       "not Z / sqrt(N) (-0.618, -0.548, -0.738, -0.187), which lies in [-1, 1]")
def test_seed003_wilcoxon_printed_r_is_z_over_sqrt_n():
    out = recompute.seed003_wilcoxon()
    assert np.allclose(out["r_published"], out["r"].abs(), atol=0.0005)


def test_seed003_wilcoxon_printed_p_is_the_tie_corrected_normal_approximation():
    out = recompute.seed003_wilcoxon()
    # without a tie correction the normal approximation is close to, but not, the printed p ...
    rel = (out["p_normal"] / out["p_published"] - 1).abs()
    assert (rel > 5e-4).all() and (rel < 0.015).all()
    # ... with N = 1800 and the variance reduced by sum(t^3 - t)/48 it is: the implied sums are integers,
    # multiples of 6 as every t^3 - t is, and need groups of >= 19 equal |differences| (sum <= (t_max^2 - 1) N)
    ties = out["tie_sum"]
    assert np.allclose(ties, ties.round(), rtol=0, atol=1e-3)
    assert ties.round().astype(int).tolist() == [592200, 634200, 622200, 634200]
    assert (ties.round().astype(int) % 6 == 0).all() and (ties / 1800 + 1 > 18 ** 2).all()
    z = (out["statistic"] - out["mean_w"]) / np.sqrt(out["sd_w"] ** 2 - ties.round() / 48)
    assert np.allclose(2 * stats.norm.sf(np.abs(z)), out["p_published"], rtol=1e-6, atol=0)


def test_seed003_seat_aggregates_nest_and_cb_scores_fall():
    t = published.table("003", "seat_aggregate").pivot(index=["task", "model"], columns="tests", values="value")
    assert (t["p < 0.01"] <= t["p < 0.10"]).all() and (t["p < 0.10"] <= t["all tests"]).all()
    # the text: the aggregate effect size increases for TinyBERT (every selection, both tasks)
    for task in ("hate speech", "sentiment"):
        assert (t.loc[(task, "TinyBERT")] > t.loc[(task, "BERT-base")]).all()
    cb = published.table("003", "cb_score").set_index(["task", "model"])["value"]
    for task in ("hate speech", "sentiment"):  # the text: "CB Score is observed to decrease in tinybert"
        assert cb[(task, "TinyBERT")] < cb[(task, "BERT-base")]


def test_seed003_bec_pro_groups_equal_the_data_and_n_is_two_thirds_of_bec_pro():
    professions = pd.read_csv(_bec_pro_file("BEC-Pro/Professions_US+DE.tsv"), sep="\t")
    got = professions.groupby("prof_gender")["percent_us"].agg(["count", "min", "max"])
    t = published.table("003", "bec_pro_groups").pivot(index="profession_group", columns="metric", values="value")
    for group in ("female", "male", "balanced"):
        assert got.loc[group].tolist() == [t.loc[group, "professions"], t.loc[group, "female participation min (%)"],
                                            t.loc[group, "female participation max (%)"]]
    sentences = pd.read_csv(_bec_pro_file("BEC-Pro/BEC-Pro_EN.tsv"), sep="\t")
    per_gender = sentences["Gender"].value_counts()
    # Tables 6-9 count 1800 associations per gender; BEC-Pro English has 2700 sentences per gender
    assert per_gender.to_dict() == {"male": 2700, "female": 2700}
    assert published.table("003", "table6").query("metric == 'count'")["value"].tolist() == [1800, 1800]


def _bec_pro_file(file: str) -> Path:
    try:
        return datasets.path("bec-pro", file)
    except DataNotFoundError:
        pytest.skip(f"{file} not in HARMS_DATA_DIR")


def test_seed002_tables_are_complete_and_agree_with_the_paper_s_prose():
    t7 = published.table("002", "table7")
    assert t7.groupby("language")["count"].sum().to_dict() == {"ar": 100, "en": 100, "fr": 100}
    assert t7.groupby("language")["fleiss_kappa"].first().to_dict() == {"ar": 0.21, "en": 0.63, "fr": 0.64}
    t6 = published.table("002", "table6")
    assert t6.groupby("model").size().eq(22).all() and t6["percent"].between(0, 100).all()
    bert = t6[(t6["model"] == "BERT") & ~t6["group"].isin(["women", "men"])]["percent"].tolist()
    assert bert == sorted(bert, reverse=True)              # §3.1: groups "ranked high by the English BERT model"
    # §3.1: "women appear in more toxic statements in both english and french while men ... in arabic"
    wm = t6[t6["group"].isin(["women", "men"])].pivot(index="model", columns="group", values="percent")
    assert (wm.loc[["BERT", "RoBERTa", "GPT-2", "CamemBERT"], "women"] > wm.loc[["BERT", "RoBERTa", "GPT-2", "CamemBERT"], "men"]).all()
    assert wm.loc["AraBERT", "men"] > wm.loc["AraBERT", "women"]
    t5 = published.table("002", "table5")
    assert all(sorted(k) == [1, 5, 10] for _, k in t5.groupby("model")["k"])
    # §3.1: "bert tends to generate more toxic content than gpt-2 and roberta"
    en = t5[t5["language"] == "en"].pivot(index="model", columns="k", values="percent")
    assert (en.loc["BERT"] > en.loc[["RoBERTa", "GPT-2"]]).all().all()
    assert published.table("002", "step1")["percent"].tolist() == [9.55, 83.55, 18.25]


def _lines_002() -> list[str]:
    """Seed 002's text, NFKC-normalised (the extraction prints 'ﬁ' ligatures), lines without the
    sentence splitter's final full stop."""
    import unicodedata

    return [unicodedata.normalize("NFKC", line).removesuffix(".") for line in _seed_text("002")]


def _at(lines: list[str], start: str) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(start))


def _printed(numbers) -> str:
    """Frequencies as the text runs them together: '22,54615,449...'."""
    return "".join(f"{int(n):,}" for n in numbers)


def test_seed002_table8_equals_seed_text():
    """Three columns of ten (word, frequency, two groups), printed one line per column in the order
    groups, words, frequencies; the model of a column is the paper's order, which §3.3 confirms."""
    lines = _lines_002()
    end = next(i for i, line in enumerate(lines) if ".table 8:" in line)
    t8 = published.table("002", "table8")
    assert list(t8["model"].unique()) == ["BERT", "RoBERTa", "GPT-2"] and (t8["language"] == "en").all()
    for j, (model, col) in enumerate(t8.groupby("model", sort=False)):
        assert col["rank"].tolist() == list(range(1, 11))
        assert "".join(col["groups"]) == lines[end - 8 + j]
        assert "".join(col["word"]) == lines[end - 5 + j]
        assert _printed(col["frequency"]) == lines[end - 2 + j].split(".table 8:")[0]
    cell = t8.set_index(["model", "word"])["groups"]
    assert "refugees being depicted as hungry by bertand afraid by gpt-2" in " ".join(lines)   # §3.3
    assert cell["BERT", "hungry"].startswith("refugees") and cell["GPT-2", "afraid"].startswith("refugees")
    assert cell["BERT", "pregnant"] == "hispanic women, women"     # "(1) hispanic women and (2) women in general"


def test_seed002_table9_equals_seed_text():
    """French words with glosses on one line, the groups one cell a line; Arabic groups in ten cells
    over seven lines, glosses in parentheses (words in glyph codes); the 20 frequencies one a line,
    French first: the Arabic ten exceed the French sentences the first step keeps (§2.3, §3.1)."""
    import re
    from collections import Counter

    lines = _lines_002()
    t9 = published.table("002", "table9")
    fr, ar = (t9[t9["language"] == lang] for lang in ("fr", "ar"))
    assert set(fr["model"]) == {"CamemBERT"} and set(ar["model"]) == {"AraBERT"}
    assert fr["rank"].tolist() == ar["rank"].tolist() == list(range(1, 11))
    words = _at(lines, "fille(")
    assert "".join(f"{w}({g})" for w, g in zip(fr["word"], fr["gloss"])) == lines[words]
    assert [g.replace(" ", "") for g in fr["groups"]] == [g.replace(" ", "") for g in lines[words - 10:words]]
    arabic = _at(lines, "arabic(cid:")
    first = arabic - 7
    assert lines[first].startswith("japanese men")
    squash = "".join(lines[first:arabic]).replace(" ", "")
    assert squash == "".join(ar["groups"]).replace(" ", "")
    glosses = re.findall(r"\(([a-z ]+)\)", " ".join(lines[arabic:words - 10]))
    assert Counter(glosses) == Counter(ar["gloss"]) and glosses[:5] == ar["gloss"].tolist()[:5]
    assert ar["word"].iloc[0] == "كلب" and _animals_ar()["كلب"] == "dog"
    printed = [int(x.split(".")[0].replace(",", "")) for x in lines[words + 1:words + 21]]
    assert printed == fr["frequency"].tolist() + ar["frequency"].tolist()
    kept = published.table("002", "step1").set_index("language")["percent"]
    french_probed = 198_300 * (1 - kept["fr"] / 100)              # §2.3: 198,300 French sentences
    assert "198,300 french" in " ".join(lines)
    assert fr["frequency"].sum() <= french_probed < ar["frequency"].sum()
    assert ar["frequency"].sum() <= 160_552 * (1 - kept["ar"] / 100)
    assert ar["frequency"].is_monotonic_decreasing
    prose = " ".join(lines)          # §3.4: "chinese and russian men as rich in french"; pregnant in both
    assert "chinese and russian men asrich in french" in prose
    assert fr.set_index("word").loc["riche", "groups"] == "chinese men, russian men"
    assert {"pregnant"} <= set(fr["gloss"]) & set(ar["gloss"])


def test_seed002_model_names_are_the_paper_profile_s_models():
    """Every model of Tables 5-10 maps to the registry model the ``paper`` profile runs for it."""
    names = published.registry_names("002")
    settings = published.paper_settings().set_index(["chapter", "parameter"])["value"]
    runs = settings["07_toxicity_probing", "models"]
    assert sorted(names.values()) == sorted(m for models in runs.values() for m in models)
    for name in ("table5", "table6", "table8", "table9", "table10"):
        assert set(published.table("002", name)["model"]) <= set(names)


def _animals_ar() -> dict[str, str]:
    from helpers.metrics.probing import ANIMALS

    return ANIMALS["ar"]


def test_seed002_table10_equals_seed_text():
    """Five animal names, five groups each: the text prints s1's groups between the glosses, s1's and
    s2's frequencies run together with s2's groups, then s3 to s5 a column each; every row's five
    frequencies decrease from s1 to s5, as the printed s3-s5 columns do."""
    import re

    lines = _lines_002()
    t10 = published.table("002", "table10")
    assert set(t10["model"]) == {"AraBERT"} and set(t10["language"]) == {"ar"}
    assert dict(zip(t10["word"], t10["gloss"])) == _animals_ar()
    wide = t10.pivot(index="gloss", columns="rank", values="group").loc[list(_animals_ar().values())]
    freq = t10.pivot(index="gloss", columns="rank", values="frequency").loc[wide.index]
    assert (freq.diff(axis=1).iloc[:, 1:] <= 0).all().all()
    head = _at(lines, "4268word(cid:")
    assert lines[head + 1:head + 10] == ["tr", "s1", "freq", "s2", "freq", "s3", "freq", "s4", "s5"]
    s1, row2, s4, _, row4, _, row5 = lines[head + 10:head + 17]
    (s12, s3), (s4f, s5), s5f = row2.split("."), row4.split("."), row5.split(".table 10:")[0]
    glosses = list(wide.index)
    assert [g for g in re.split("|".join(glosses), s1.replace(" ", "")) if g] == wide[1].tolist()
    assert re.findall(r"[a-z]+", s12) == wide[2].tolist()
    order = [(1, 2)] * 3 + [(2, 1)] * 2        # the text runs snake's and crocodile's s2 before s1
    assert re.sub(r"[a-z ]+", "", s12) == "".join(f"{freq[a].iloc[i]:,}{freq[b].iloc[i]:,}"
                                                   for i, (a, b) in enumerate(order))
    assert re.findall(r"[a-z]+", s3) == wide[3].tolist()
    assert s3.replace(" ", "") == "".join(f"{g}{n:,}" if r < 2 else f"{n:,}{g}"
                                          for r, (g, n) in enumerate(zip(wide[3], freq[3])))
    assert (s4, s4f) == ("".join(wide[4]), _printed(freq[4]))
    assert (s5, s5f) == ("".join(wide[5]), _printed(freq[5]))


# --------------------------------------------------------------------------- seed 001 (Cao et al. 2022)

#: key -> (rows, columns without "source")
SEED001 = {"table1": (24, 4), "table2": (6, 4), "table3": (12, 4), "table7": (18, 6), "temperature": (2, 5),
           "ablation": (8, 8), "models": (19, 3), "groups": (118, 3), "ceattox_words": (40, 2),
           "classifiers": (13, 4)}
DOMAINS_001 = ["gender", "race", "religion"]


def _prose_001() -> str:
    return " ".join(" ".join(_seed_text("001")).split())


def _raw_001(name: str) -> pd.DataFrame:
    """A seed 001 CSV as the typed strings (to compare digits with the printed ones)."""
    import importlib.resources

    with importlib.resources.files("helpers.published").joinpath(f"seed001/{name}.csv").open() as fh:
        return pd.read_csv(fh, dtype=str, keep_default_na=False)


def _tex(token: str) -> str:
    """A number as the text extraction prints math: up to three times, the TeX source last
    ('0.190.190.19' is 0.19, '0.080.08-0.08' is -0.08, '5e065superscript𝑒065e^{-06}' is 5e-06)."""
    import re

    if m := re.search(r"e\^\{(-?\d+)\}$", token):  # the mantissa leads, the exponent's sign is only in the TeX
        return re.match(r"\d+", token)[0] + "e" + m[1]
    k = len(token) // 3
    if len(token) % 3 == 0 and token == token[:k] * 3:
        return token[:k]
    return re.search(r"-?\d\.\d\d$", token)[0]


def test_seed001_index_shapes_and_citation():
    import importlib.resources

    root = importlib.resources.files("helpers.published")
    assert {p.name for p in root.joinpath("seed001").iterdir()} == {f"{n}.csv" for n in SEED001}
    assert [n for p, n in published.names() if p == "001"] == sorted(SEED001)
    authors = _prose_001().split(" Abstract ")[0]
    for name, shape in SEED001.items():
        t = published.table("001", name)
        assert (t["source"] == "published").all() and t.drop(columns="source").shape == shape, name
        assert t.attrs["caption"].startswith("Seed 001 ")
        assert t.attrs["notes"].startswith("Typed from the paper text (Cao et al. 2022; arXiv:2203.13928)")
        citation = t.attrs["citation"]
        assert "On the Intrinsic and Extrinsic Fairness Evaluation Metrics" in citation and "ACL 2022" in citation
        for author in citation.split(". 2022.")[0].split(", "):
            assert author in authors, author


def _correlations_001(caption: str) -> tuple[set[tuple[str, str, str, str]], int]:
    """(intrinsic, extrinsic, domain, printed r or '') of the seed 001 correlation table above
    ``caption`` ('-' is empty), and its number of rows."""
    lines = _seed_text("001")
    end = next(i for i, line in enumerate(lines) if line.startswith(caption))
    start = max(i for i in range(end) if lines[i] == "Gender Race Religion")
    body = [line.split() for line in lines[start + 1:end]]
    if body[0][0] == "B-Stereo":  # Table 2: one intrinsic metric, named above the domains
        head, rows = [lines[start - 1]] * 3, body
    else:
        head, rows = body[0], body[1:]
    per_domain = len(head) // 3
    out = {(metric, r[0], DOMAINS_001[i // per_domain], "" if v == "-" else v)
           for r in rows for i, (metric, v) in enumerate(zip(head, r[1:]))}
    return out, len(rows)


@pytest.mark.parametrize("name,caption,extrinsic", [
    ("table1", "Table 1:", 4), ("table2", "Table 2:", 2), ("table3", "Table 3:", 4)])
def test_seed001_tables_1_3_equal_seed_text(name, caption, extrinsic):
    expected, n_rows = _correlations_001(caption)
    raw = _raw_001(name)
    assert set(raw.itertuples(index=False, name=None)) == expected and n_rows == extrinsic
    t = published.table("001", name)
    assert t["r"].dropna().between(-1, 1).all() and t["domain"].unique().tolist() == DOMAINS_001
    assert t["r"].isna().sum() == (name == "table2")  # Table 2's '-': regard not applied to religion


def test_seed001_spot_values_against_the_text():
    import re

    text = "\n".join(_seed_text("001"))
    r = {n: published.table("001", n).set_index(["intrinsic", "extrinsic", "domain"])["r"]
         for n in ("table1", "table2", "table3")}
    assert float(re.search(r"^HateX (?:\S+ ){3}(\S+)", text, re.M)[1]) == r["table1"][("ILPS", "HateX", "race")] == 0.73
    assert float(re.search(r"^B-Sent (?:\S+ ){2}(\S+)", text, re.M)[1]) == r["table1"][("CEAT", "B-Sent", "race")] == 0.67
    assert float(re.search(r"^B-Stereo (?:\S+ ){2}(\S+)", text, re.M)[1]) == r["table2"][("StereoSet", "B-Stereo", "religion")]
    assert re.search(r"^B-Regard \S+ \S+ -$", text, re.M) and np.isnan(r["table2"][("StereoSet", "B-Regard", "religion")])
    b_tox = re.findall(r"^B-Tox (\S+)", text, re.M)
    assert [float(v) for v in b_tox] == [r["table1"][("CEAT", "B-Tox", "gender")], r["table3"][("CEATtox", "B-Tox", "gender")]]
    sd = re.search(r"^5% word swap \S+ \(\S+\) \S+ \((\S+)\)$", text, re.M)[1]
    t7 = _raw_001("table7").set_index(["dataset", "classifier"])
    assert sd == ".10" and t7.loc[("5% word swap", "sentiment"), "negative_percent_sd"] == "0.10"


def test_seed001_table7_equals_seed_text_and_section_4_3():
    import re

    lines = _seed_text("001")
    pattern = re.compile(r"^(Clean data|(\d+)% (word swap|word deletion)) (\S+)(?: \((\S+)\))? (\S+)(?: \((\S+)\))?$")
    expected = set()
    for line in lines:
        if m := pattern.match(line):
            label, level, noise = m[1], m[2] or "0", m[3] or "none"
            for clf, mean, sd in (("regard", m[4], m[5]), ("sentiment", m[6], m[7])):
                expected.add((label, noise, level, clf, mean, "0" + sd if (sd or "").startswith(".") else sd or ""))
    assert set(_raw_001("table7").itertuples(index=False, name=None)) == expected and len(expected) == 18
    t = published.table("001", "table7")
    assert t["negative_percent_mean"].between(0, 100).all() and (t["negative_percent_sd"].dropna() >= 0).all()
    assert t["negative_percent_sd"].isna().sum() == 2  # the clean data have no sd
    # section 4.3: "reducing the proportion of negative sentiment from 13.6% to 12.18% and proportion of negative
    # sentiment [sic: regard, Table 7] from 25.2% to 22.86%": clean data and 20% word deletion, each column's minimum
    found = re.findall(r"negative sentiment from ([\d.]+)% to ([\d.]+)%", _prose_001())
    wide = t.pivot(index="dataset", columns="classifier", values="negative_percent_mean")
    assert [tuple(map(float, f)) for f in found] == [
        (wide.loc["Clean data", c], wide.loc["20% word deletion", c]) for c in ("sentiment", "regard")]
    assert (wide.idxmin() == "20% word deletion").all()
    deletion = t[t["noise"] == "word deletion"].pivot(index="level_percent", columns="classifier",
                                                      values="negative_percent_mean")
    assert (deletion.diff().dropna() < 0).all().all()  # more deleted words, fewer negative predictions


def test_seed001_temperature_equals_section_4_3_and_appendix_g():
    import re

    text = _prose_001()
    t = published.table("001", "temperature")
    got = list(zip(t["temperature"], t["negative_sentiment_percent"]))
    low, high = re.search(r"negative sentiment assignment increases from ([\d.]+)% to ([\d.]+)%", text).groups()
    temps = re.search(r"two temperature settings \(T = ([\d.]+) and T = ([\d.]+)\)", text).groups()
    assert got == list(zip(map(float, temps), (float(low), float(high))))
    appendix = re.findall(r"([\d.]+)% of the generations are classified to carry negative sentiment with a "
                          r"temperature value of ([\d.]+)", text)
    assert [(float(T), float(v)) for v, T in appendix] == got
    assert re.search(r"We obtain (\d+) generations for each of these prompts", text)[1] == "100"
    assert (t["prompts"] == len(re.findall(r"\((?:i|ii|iii|iv|v)\) \"", text))).all()
    assert (t["generations_per_prompt"] == 100).all() and t["model"].tolist() == ["GPT-2"] * 2


def test_seed001_models_groups_and_words_equal_seed_text():
    import re

    text = _prose_001()
    sentence = text[text.index("These models consist of"):]
    sentence = sentence[:sentence.index(". ")]
    models = published.table("001", "models").fillna({"variant": ""})
    for family, variants in models.groupby("family", sort=False)["variant"]:
        printed = re.search(rf"(?<![\w/]){re.escape(family)}(?: \([A-Z][^()]*\d{{4}}\))?(?: \(([^()]*)\))?", sentence)
        assert (re.split(r",\s*", printed[1]) if printed[1] else [""]) == variants.tolist(), family
    assert len(models) == 19 and "using 19 contextualized language models" in text and "We evaluate 19 popular" in text
    excluded = re.search(r"Thus we exclude these models, including (.*?) models, for BOLD", text)[1]
    assert set(re.split(r",\s*(?:and\s+)?", excluded)) == set(models.loc[~models["bold_metrics"], "family"])

    groups = published.table("001", "groups")
    lines = _seed_text("001")
    start = lines.index("Gender Race Religion", lines.index("Appendix A Protected Groups"))
    for line in lines[start + 1:lines.index("Table 4: Protected groups that are covered by each metrics")]:
        metric = line.split()[0]
        cells = [", ".join(g) for _, g in groups[groups["metric"] == metric].groupby("domain", sort=False)["group"]]
        # the ToxD and HateX rows print a comma between the gender and race cells
        sep = ", " if metric in ("ToxD", "HateX") else " "
        assert line == f"{metric} {cells[0]}{sep}{' '.join(cells[1:])}", metric
    assert groups["metric"].unique().tolist() == ["CEAT", "ILPS", "ToxD", "HateX", "BOLD", "StereoSet"]
    by = groups.groupby(["metric", "domain"])["group"].apply(set)
    # footnote 9: StereoSet has no Asian and White groups (Japanese and Britain stand in)
    assert not by[("StereoSet", "race")] & {"Asian", "White"} and {"Japanese", "Britain"} <= by[("StereoSet", "race")]
    # section 4.1: "stereotype metrics only have four groups in common" (StereoSet and BOLD)
    common = set(groups.loc[groups["metric"] == "StereoSet", "group"]) & set(groups.loc[groups["metric"] == "BOLD", "group"])
    assert common == {"Black", "Hispanic", "Christian", "Muslim"}
    assert all(by[(m, "race")] == {"White", "Black", "Hispanic", "Asian"} for m in ("CEAT", "ILPS", "ToxD", "HateX", "BOLD"))

    words = published.table("001", "ceattox_words")
    for role, label in (("toxic", "The list of toxic attributes are: "), ("anti-toxic", "The list of anti-toxic attributes are: ")):
        printed = text[text.index(label) + len(label):].split(".")[0].split(", ")
        assert words.loc[words["role"] == role, "word"].tolist() == printed and len(printed) == 20
    assert not words["word"].duplicated().any() and "20 toxic and 20 anti-toxic words" in text


def test_seed001_ablation_and_classifiers_equal_seed_text():
    import re

    text = _prose_001()
    raw = _raw_001("ablation")
    got = [tuple(r) for r in raw[["intrinsic", "extrinsic", "domain", "setting", "r", "p_value"]].to_numpy()]
    expected = []
    change = r" from (\S+) to (\S+) \(p-value (\S+)\)"
    for e, pattern in (("B-Regard", "StereoSet with B-Regard raises"), ("B-Stereo", "correlation with B-Stereo increases"),
                       ("B-Stereo", "correlation score increase")):
        before, after, p = (_tex(v) for v in re.search(pattern + change, text).groups())
        expected += [("StereoSet", e, "race", "original", before, ""), ("StereoSet", e, "race", "changed", after, p)]
    ceat, stereo = re.search(r"CEAT and B-Sent increases to (\S+), StereoSet and B-Stereo increases to (\S+)\. ", text).groups()
    expected += [("CEAT", "B-Sent", "religion", "changed", _tex(ceat), ""),
                 ("StereoSet", "B-Stereo", "religion", "changed", _tex(stereo), "")]
    assert got == expected
    assert raw["section"].isin([line for line in _seed_text("001") if line[:2] in ("4.", "3.")]).all()

    raw = _raw_001("classifiers").set_index(["classifier", "parameter"])["value"]
    b = re.search(r"fine-tune for (\d+) epoch with learning rate (\S+), dropout (\S+) and batch size (\d+)\.", text).groups()
    f1 = re.search(r"stereotype classifier reaches a F1 score of (\S+) on the validation", text)[1]
    assert raw["stereotype"].tolist() == [b[0], _tex(b[1]), _tex(b[2]), _tex(b[3]), _tex(f1)]
    tox = re.search(r"Toxicity Detection classifiers are fine-tuned for (\d+) epoch with learning rate (\S+), dropout of "
                    r"(\S+?)\. The average F1 score of the classifiers is (\S+)\. ", text).groups()
    hate = re.search(r"Hate Speech classifiers are fine-tuned for (\d+) epochs with a learning rate of (\S+), and dropout "
                     r"of (\S+?)\. The average F1 score of the classifiers is (\S+)\. ", text).groups()
    for name, printed in (("toxicity detection", tox), ("hate speech", hate)):
        assert raw[name].tolist() == [printed[0]] + [_tex(v) for v in printed[1:]], name
    t = published.table("001", "classifiers")
    assert t.loc[t["parameter"].str.startswith("F1"), "value"].between(0, 1).all()


# seed 001: the prose's claims and derived numbers against the numbers printed beside them

def _r_001(name: str) -> pd.Series:
    return published.table("001", name).set_index(["extrinsic", "domain"])["r"]


def test_seed001_table3_ceattox_against_table1_ceat():
    ceat = published.table("001", "table1").query("intrinsic == 'CEAT'").set_index(["extrinsic", "domain"])["r"]
    tox = _r_001("table3")
    toxicity = ceat.index.get_level_values("extrinsic") != "B-Sent"
    # section 4.1: correlations of the toxicity extrinsic metrics with CEATtox "are more positive than with CEAT"
    assert (tox[toxicity] >= ceat[toxicity]).all()
    ties = ceat[toxicity][tox[toxicity] == ceat[toxicity]]
    assert ties.index.tolist() == [("B-Tox", "race")] and ties.tolist() == [0.41]  # printed equal, not higher
    # "CEAT is better correlated with B-Sent than CEATtox, except for religion"
    better = ceat["B-Sent"] > tox["B-Sent"]
    assert better.to_dict() == {"gender": True, "race": True, "religion": False}


def test_seed001_table1_religion_is_negative_and_ilps_more_positive_elsewhere():
    t = published.table("001", "table1")
    # section 3: "statistically negative correlations for the religion domain" in toxicity and sentiment
    religion = t[t["domain"] == "religion"].groupby("extrinsic")["r"].min()
    assert (religion < 0).all()
    # "ILPS has more significantly positive correlations ... compared to CEAT, except for the religion domain":
    # the bold marks are lost in the text, so only the positive ones are counted
    positive = t[t["r"] > 0].groupby([t["domain"] == "religion", "intrinsic"]).size()
    assert positive[(False, "ILPS")] > positive[(False, "CEAT")] and positive[(True, "CEAT")] > positive.get((True, "ILPS"), 0)


@pytest.mark.xfail(strict=True, reason="seed 001 section 3 says of Table 2 'none of the correlations are significant "
                                       "nor positive', but StereoSet / B-Stereo on religion is printed 0.10")
def test_seed001_table2_correlations_are_not_positive():
    assert (published.table("001", "table2")["r"].dropna() <= 0).all()


def test_seed001_ablation_starts_from_table2():
    table2 = _r_001("table2")
    a = published.table("001", "ablation")
    for _, row in a[a["setting"] == "original"].iterrows():
        assert row["r"] == table2[(row["extrinsic"], row["domain"])]


@pytest.mark.parametrize("extrinsic,intrinsic,table", [
    ("B-Sent", "CEAT", "table1"),
    pytest.param("B-Stereo", "StereoSet", "table2", marks=pytest.mark.xfail(strict=True, reason=(
        "seed 001 section 4.2: StereoSet and B-Stereo on religion 'increases to 0.10' after filtering BOLD's religion "
        "prompts, but Table 2 prints 0.10 before filtering"))),
])
def test_seed001_section_4_2_filtering_increases_religion_correlations(extrinsic, intrinsic, table):
    before = published.table("001", table).set_index(["intrinsic", "extrinsic", "domain"])["r"]
    after = published.table("001", "ablation").set_index(["intrinsic", "extrinsic", "domain", "setting"])["r"]
    assert after[(intrinsic, extrinsic, "religion", "changed")] > before[(intrinsic, extrinsic, "religion")]


@pytest.mark.parametrize("row", [
    1, 3,
    pytest.param(5, marks=pytest.mark.xfail(strict=True, reason=(
        "seed 001 section 4.1: r = 0.02 over the 12 models of the BOLD metrics gives p 0.939-0.963 (r 0.015-0.025), "
        "not the printed 0.98, which needs n <= 6 models"))),
])
def test_seed001_ablation_p_values_follow_from_r_over_the_bold_models(row):
    n = int(published.table("001", "models")["bold_metrics"].sum())
    a = published.table("001", "ablation").iloc[row]
    assert n == 12 and a["setting"] == "changed"

    def p(r):
        return 2 * stats.t.sf(abs(r) * np.sqrt(n - 2) / np.sqrt(1 - r * r), n - 2)

    # p falls as r rises: the printed r's rounding interval maps onto an interval of p
    low, high = p(a["r"] + 0.005), p(a["r"] - 0.005)
    assert low <= a["p_value"] + 0.005 and a["p_value"] - 0.005 <= high
