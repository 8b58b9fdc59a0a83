"""helpers.datasets.load for every registered data set, checked against independent sources;
the group table (groups.csv); the package layout (registry, safety_sets, loaders)."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from helpers import datasets
from helpers.datasets import abusive, bias_sets, bold, cma, ethnic, madlibs, probing, reviews, stereoset, words
from helpers.errors import DataNotFoundError, HarmsError, InputError

COLUMNS = {  # the documented columns of each registered set (helpers/datasets/__init__.py)
    "toxigen": datasets.COLUMNS,
    "implicit-hate": datasets.COLUMNS,
    "stereoset-dev": stereoset.INTRASENTENCE_COLUMNS,
    "stereoset": stereoset.SCORE_COLUMNS,
    "causal_mediation_analysis": cma.SUMMARY_COLUMNS,
    "imdb": reviews.COLUMNS,
    "rotten-tomatoes": reviews.COLUMNS,
    "bec-pro": words.BEC_PRO_COLUMNS,
    "seat": words.SEAT_COLUMNS,
    "atomic-probing": probing.PATTERN_COLUMNS,
    "atomic-probing-groups": probing.GROUP_COLUMNS,
    "mlma": probing.MLMA_COLUMNS,
    "insults": abusive.INSULTS_COLUMNS,
    "hatexplain": bias_sets.HATEXPLAIN_COLUMNS,
    "civil-comments": bias_sets.CIVIL_COMMENTS_COLUMNS,
    "kurita-lists": words.KURITA_COLUMNS,
    "bold": bold.BOLD_COLUMNS,
    "crows-pairs": bias_sets.CROWS_PAIRS_COLUMNS,
    "redditbias": bias_sets.REDDITBIAS_COLUMNS,
    "bug": bias_sets.BUG_COLUMNS,
    "gap": bias_sets.GAP_COLUMNS,
    "panda": bias_sets.PANDA_COLUMNS,
    "holistic-bias": bias_sets.HOLISTIC_BIAS_COLUMNS,
    "bias-madlibs": madlibs.GENERATED_COLUMNS,
    "bias-madlibs-77k": madlibs.MADLIBS_COLUMNS,
    "ethnic-bias": ethnic.ETHNIC_COLUMNS,
}


def _load_or_skip(name: str, **kw) -> pd.DataFrame:
    try:
        return datasets.load(name, **kw)
    except DataNotFoundError as exc:
        pytest.skip(f"{name}: {exc}")


@pytest.mark.parametrize("name", datasets.names())
def test_every_registered_set_loads_a_tidy_frame(name):
    """Iterates over the registry: an entry without a loader (or without documented columns) fails."""
    assert datasets.spec(name).loader, f"{name} has no loader"
    assert name in COLUMNS, f"document the columns of {name} in helpers/datasets/__init__.py and here"
    df = _load_or_skip(name)
    assert isinstance(df, pd.DataFrame) and len(df) > 0
    assert list(df.columns) == COLUMNS[name]
    assert df.attrs["dataset"] == name and datasets.info(name)["loader"] == datasets.spec(name).loader


def test_entry_without_loader_or_with_unknown_loader_is_one_line(monkeypatch):
    spec = datasets.DatasetSpec(name="nothing", folder="nothing", files=(), license="-", citation="-")
    monkeypatch.setitem(datasets.REGISTRY, "nothing", spec)
    with pytest.raises(HarmsError, match="'nothing' has no loader"):
        datasets.load("nothing")
    monkeypatch.setitem(datasets.REGISTRY, "nothing", datasets.DatasetSpec(
        name="nothing", folder="nothing", files=(), license="-", citation="-", loader="cma.no_such_function"))
    with pytest.raises(HarmsError, match="loader 'cma.no_such_function' not found"):
        datasets.load("nothing")


# --------------------------------------------------------------------------- StereoSet

def test_stereoset_dev_matches_dev_json_and_upstream_predictions():
    df = _load_or_skip("stereoset-dev")
    assert len(df) == 6318 and df["cluster_id"].nunique() == 2106  # Count of the reference scores
    per_cluster = df.groupby("cluster_id")["gold_label"].apply(lambda g: tuple(sorted(g)))
    assert set(per_cluster) == {("anti-stereotype", "stereotype", "unrelated")}
    assert set(df["bias_type"]) == {"gender", "profession", "race", "religion"}
    try:  # the sentence ids the upstream model predictions score (independent files)
        preds = json.loads(datasets.path("stereoset", "predictions/predictions_gpt2_ModelNSP_GPT2LM.json").read_text())
    except DataNotFoundError:
        pytest.skip("StereoSet predictions not in HARMS_DATA_DIR")
    assert set(df["sentence_id"]) == {p["id"] for p in preds["intrasentence"]}
    raw = json.loads(datasets.path("stereoset-dev").read_text())["data"]["intrasentence"]
    first = raw[0]["sentences"][0]
    row = df.set_index("sentence_id").loc[first["id"]]
    assert (row["sentence"], row["gold_label"], row["context"]) == (first["sentence"], first["gold_label"],
                                                                     raw[0]["context"])
    blank = raw[0]["context"].split(" ").index(next(w for w in raw[0]["context"].split(" ") if "BLANK" in w))
    assert row["template_word"] == re.sub(r"[^\w]", "", first["sentence"].split(" ")[blank])


def _scores_from_text(text: str) -> dict[tuple[str, str, str, str], float]:
    """Parse upstream predictions.txt ("Evaluating predictions/predictions_<model>..." blocks, tab-indented)."""
    names = {"Count": "count", "LM Score": "lms", "SS Score": "ss", "ICAT Score": "icat"}
    out, model, task, domain = {}, None, None, None
    for line in text.splitlines():
        depth, item = len(line) - len(line.lstrip("\t")), line.strip()
        if item.startswith("Evaluating predictions/"):
            model = re.sub(r"^predictions_|\.json$", "", item.split("/")[-1].removesuffix("...")).split("_")[0]
        elif item and ":" not in item:
            task, domain = (item, "overall") if depth == 0 else (task, item)
        elif ":" in item:
            key, value = item.split(":")
            out[(model, task, domain, names[key])] = float(value)
    return out


def test_stereoset_reference_scores_equal_upstream_text():
    df = _load_or_skip("stereoset")
    try:
        text = datasets.path("stereoset", "reference_scores_predictions.txt").read_text()
    except DataNotFoundError:
        pytest.skip("reference_scores_predictions.txt not in HARMS_DATA_DIR")
    expected = _scores_from_text(text)
    got = {tuple(k): v for k, v in ((tuple(r[:4]), r[4]) for r in df.itertuples(index=False, name=None))}
    assert set(got) == set(expected)  # every model, task, domain and score of the upstream text
    assert all(got[k] == pytest.approx(expected[k], rel=1e-12) for k in expected)
    assert len(df) == 11 * (2 * 5 + 1) * 4 and not df.duplicated(["model", "task", "domain", "score"]).any()
    gpt2 = df.set_index(["model", "task", "domain", "score"])["value"]
    assert gpt2[("gpt2", "intrasentence", "overall", "count")] == 2106
    assert round(gpt2[("gpt2", "intrasentence", "overall", "ss")], 2) == 61.93  # SOURCE.md


def test_stereoset_bad_files_are_one_line(tmp_path):
    f = tmp_path / "dev.json"
    f.write_text(json.dumps({"data": {}}))
    with pytest.raises(InputError, match="not a StereoSet file") as exc:
        datasets.load("stereoset-dev", path=f)
    assert "\n" not in str(exc.value)
    cluster = {"id": "c", "bias_type": "gender", "target": "t", "context": "A BLANK.",
               "sentences": [{"id": "s", "sentence": "A man.", "gold_label": "maybe"}]}
    f.write_text(json.dumps({"data": {"intrasentence": [cluster]}}))
    with pytest.raises(InputError, match="sentence s: unknown gold_label 'maybe'"):
        datasets.load("stereoset-dev", path=f)
    f.write_text(json.dumps({"m": {"intrasentence": {"gender": {"Bogus": 1}}}}))
    with pytest.raises(InputError, match="not StereoSet evaluation output"):
        datasets.load("stereoset", path=f)


# --------------------------------------------------------------------------- causal mediation analysis

def test_cma_summary_equals_the_upstream_result_files_present():
    df = _load_or_skip("causal_mediation_analysis")
    assert len(df) == 103 and df["source_file"].is_unique  # SOURCE.md: 103 upstream files
    assert set(df["dataset"]) == {"winobias", "winogender"}
    checked = 0
    for f in datasets.spec("causal_mediation_analysis").files:
        if not f.name.endswith(".json") or "attention_intervention_" not in f.name:
            continue
        top = json.loads(datasets.path("causal_mediation_analysis", f.name).read_text())
        row = df.set_index("source_file").loc[f.name]
        for key in cma.EFFECTS + ["num_examples_loaded", "num_examples_analyzed", "model_version"]:
            assert row[key] == top[key], (f.name, key)
        checked += 1
    assert checked == 4


def test_cma_bad_summary_is_one_line(tmp_path):
    f = tmp_path / "s.csv"
    f.write_text("source_file,dataset\na,winobias\n")
    with pytest.raises(InputError, match="missing column"):
        datasets.load("causal_mediation_analysis", path=f)
    good = ",".join(cma.SUMMARY_COLUMNS) + "\n" + ",".join(["x.json", "winobias", "gpt2", "True", "dev", "", "1", "1",
                                                             "0.25", "1.0", "1", "0.1", "oops", "0.1"]) + "\n"
    f.write_text(good)
    with pytest.raises(InputError, match=r"row 0 \(x.json\): unknown dataset or non-finite effect"):
        datasets.load("causal_mediation_analysis", path=f)


# --------------------------------------------------------------------------- groups.csv

def test_groups_are_named_once():
    assert datasets.GROUPS == ["asian", "black", "chinese", "jewish", "latino", "lgbtq", "mental dis", "mexican",
                               "middle-eastern", "muslim", "native-american", "physical dis", "women"]
    assert datasets.GROUP_LABELS == dict(zip(datasets.GROUPS, [
        "Asian", "Black", "Chinese", "Jewish", "Latino", "LGBTQ", "Mentally disabled", "Mexican",
        "Middle Eastern", "Muslim", "Native American", "Physically disabled", "Women"])) | {"all_groups": "All groups"}
    assert list(datasets.GROUP_LABELS)[-1] == "all_groups" and "men" not in datasets.GROUP_LABELS
    subjects = datasets.group_subjects()
    assert list(subjects) == [*datasets.GROUPS, "men"]
    assert subjects["black"] == "The Black person" and subjects["women"] == "The woman" and subjects["men"] == "The man"
    assert subjects["mental dis"] == "The mentally disabled person"
    t = datasets.group_table()
    assert list(t.columns) == ["group", "label", "subject", "paper_label", "dataset"] and t["group"].is_unique


# --------------------------------------------------------------------------- package layout

def test_package_split_and_public_names():
    from helpers.datasets import registry, safety_sets

    for name in ("load", "path", "fetch", "info", "names", "spec", "register", "sample_per_group", "group_counts",
                 "GROUPS", "GROUP_LABELS", "LABELS", "COLUMNS", "X000D", "DatasetSpec", "DataFile", "REGISTRY"):
        assert hasattr(datasets, name), name
    assert datasets.fetch is registry.fetch and datasets.REGISTRY is registry.REGISTRY
    assert datasets.sample_per_group is safety_sets.sample_per_group
    assert not hasattr(datasets, "sha256_of") and not hasattr(registry, "_atomic_write")
