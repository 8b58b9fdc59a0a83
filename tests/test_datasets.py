"""helpers.datasets: registry, lookup, fetch (network mocked), load + validation, sampling."""

from __future__ import annotations

import collections
import json
import time

import pytest
import requests

from helpers import datasets, paths
from helpers.hashing import sha256_file
from helpers.errors import DataNotFoundError, HarmsError, InputError


def _have(name: str) -> bool:
    try:
        datasets.path(name)
        return True
    except DataNotFoundError:
        return False


needs_toxigen = pytest.mark.skipif(not _have("toxigen"), reason="toxigen_safenlp not in HARMS_DATA_DIR")
needs_ih = pytest.mark.skipif(not _have("implicit-hate"), reason="implicit_hate_safenlp not in HARMS_DATA_DIR")


def test_registry_entries_have_provenance():
    for name in ("toxigen", "implicit-hate", "causal_mediation_analysis", "stereoset", "stereoset-dev"):
        assert name in datasets.names()
        info = datasets.info(name)
        assert info["license"] and info["citation"] and info["commit"]
        for f in info["files"]:
            assert f["url"] is None or info["commit"] in f["url"]
    assert datasets.info("toxigen")["url"] == ("https://raw.githubusercontent.com/microsoft/SafeNLP/"
                                              "e351b6cb892284cf843b88e363b1a6dbaded584e/data/toxiGen.json")


@pytest.mark.parametrize("name", ["toxigen", "implicit-hate", "causal_mediation_analysis", "stereoset"])
def test_sha256_of_present_files_match_registry(name):
    spec = datasets.spec(name)
    checked = 0
    for f in spec.files:
        try:
            p = datasets.path(name, f.name)
        except DataNotFoundError:
            continue
        assert sha256_file(p) == f.sha256, f.name
        checked += 1
    if checked == 0:
        pytest.skip("no file of this data set present")


def test_missing_dataset_names_dirs_and_fetch_command(tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_DATA_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setattr(paths, "download_dir", lambda: tmp_path / "raw")
    with pytest.raises(DataNotFoundError) as exc:
        datasets.load("toxigen")
    msg = str(exc.value)
    assert "\n" not in msg and "nowhere" in msg and str(tmp_path / "raw") in msg
    assert "harms fetch-data toxigen" in msg


def test_unknown_name_is_one_line():
    with pytest.raises(DataNotFoundError, match="neither a data set"):
        datasets.load("no-such-set")


def test_fetch_offline_fails_fast_and_clearly(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(paths, "download_dir", lambda: tmp_path / "raw")

    def refuse(url, **kw):
        raise requests.ConnectionError("network is unreachable")

    monkeypatch.setattr(requests, "get", refuse)
    t0 = time.perf_counter()
    with pytest.raises(DataNotFoundError) as exc:
        datasets.fetch("toxigen")
    assert time.perf_counter() - t0 < 2
    msg = str(exc.value)
    assert "\n" not in msg and "ConnectionError" in msg and "toxiGen.json" in msg
    assert not (tmp_path / "raw" / "toxigen_safenlp" / "toxiGen.json").exists()
    from helpers import cli

    assert cli.main(["fetch-data", "toxigen"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("harms: error: cannot download 'toxigen'") and err.count("\n") == 1


class _Resp:
    def __init__(self, content: bytes):
        self.content = content

    def raise_for_status(self):
        pass


@needs_ih
def test_fetch_verifies_checksum_and_writes_atomically(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "download_dir", lambda: tmp_path / "raw")
    real = {f.url: datasets.path("implicit-hate", f.name).read_bytes()
            for f in datasets.spec("implicit-hate").files if f.url}
    monkeypatch.setattr(requests, "get", lambda url, **kw: _Resp(real[url]))
    p = datasets.fetch("implicit-hate")
    assert p == tmp_path / "raw" / "implicit_hate_safenlp" / "implicitHate.json"
    assert sha256_file(p) == datasets.info("implicit-hate")["sha256"]
    assert not list(p.parent.glob(".*part")) and not list(p.parent.glob(".*harms-tmp*"))

    (p.parent / "implicitHate.json").unlink()
    monkeypatch.setattr(requests, "get", lambda url, **kw: _Resp(b"[]"))
    with pytest.raises(HarmsError, match="checksum mismatch"):
        datasets.fetch("implicit-hate")
    assert not (p.parent / "implicitHate.json").exists() and not list(p.parent.glob(".*part"))
    assert not list(p.parent.glob(".*harms-tmp*"))


@needs_toxigen
def test_load_toxigen_matches_source_counts_and_cleans_x000d():
    df = datasets.load("toxigen")
    assert list(df.columns) == ["id", "text", "toxicity", "label", "target_groups"]
    assert len(df) == 6514 and df["id"].is_unique
    assert df["label"].value_counts().to_dict() == {"neutral": 3747, "hate": 2767}
    counts = collections.Counter(g for gs in df["target_groups"] for g in gs)
    # group counts stated in the data folder's SOURCE.md
    assert counts == {"asian": 883, "latino": 743, "women": 641, "mental dis": 624, "lgbtq": 604,
                      "black": 591, "physical dis": 591, "muslim": 548, "jewish": 536,
                      "native-american": 502, "mexican": 459, "chinese": 437, "middle-eastern": 431}
    assert set(counts) == set(datasets.GROUPS) and len(datasets.GROUP_LABELS) >= 13
    assert df["toxicity"].between(1, 5).all()

    raw = json.loads(datasets.path("toxigen").read_text())
    affected = [r for r in raw if "_x000D_" in r["text"]]
    assert df.attrs["x000d_rows"] == len(affected) == 34
    assert not df["text"].str.contains("_x000D_").any()
    by_id = dict(zip(df["id"], df["text"]))
    for r in raw:
        if "_x000D_" in r["text"]:
            assert by_id[r["id"]] == " ".join(r["text"].replace("_x000D_", " ").split())
        else:
            assert by_id[r["id"]] == r["text"]
    kept = datasets.load("toxigen", fix_x000d=False)
    assert kept["text"].tolist() == [r["text"] for r in raw]


@needs_ih
def test_load_implicit_hate():
    df = datasets.load("implicit-hate")
    assert len(df) == 14200
    assert df.groupby("label")["toxicity"].unique().map(list).to_dict() == {"hate": [2.25], "neutral": [1.0]}
    assert df["target_groups"].map(tuple).unique().tolist() == [("all_groups",)]


def _row(**kw):
    row = {"id": 7, "text": "a sentence", "toxicity_score": 2.0, "label": "neutral", "target_groups": ["women"]}
    row.update(kw)
    return row


@pytest.mark.parametrize("bad, message", [
    ({"label": "toxic"}, "unknown label 'toxic'"),
    ({"toxicity_score": 7}, "toxicity 7 outside 1-5"),
    ({"toxicity_score": 0.5}, "outside 1-5"),
    ({"toxicity_score": "high"}, "toxicity 'high' is not a number"),
    ({"toxicity_score": None}, "is not a number"),
    ({"text": "   "}, "empty or non-string text"),
    ({"text": 5}, "empty or non-string text"),
    ({"text": "_x000D_ _x000D_"}, "empty after removing _x000D_"),
    ({"target_groups": []}, "target_groups must be a non-empty list"),
    ({"target_groups": 3}, "target_groups must be a non-empty list"),
    ({"id": 1}, "duplicate id"),
])
def test_validation_errors_name_file_row_and_id(tmp_path, bad, message):
    f = tmp_path / "mine.json"
    f.write_text(json.dumps([_row(id=1), _row(**bad)]))
    with pytest.raises(InputError) as exc:
        datasets.load(f)
    msg = str(exc.value)
    assert message in msg and "mine.json" in msg and "row 1" in msg and "\n" not in msg


def test_missing_field_and_not_a_list(tmp_path):
    f = tmp_path / "m.json"
    row = _row()
    del row["label"]
    f.write_text(json.dumps([row]))
    with pytest.raises(InputError, match=r"m.json: row 0 \(id 7\): missing field\(s\) label"):
        datasets.load(f)
    f.write_text(json.dumps({"text": "x"}))
    with pytest.raises(InputError, match="expected a JSON list"):
        datasets.load(f)
    f.write_text("[{")
    with pytest.raises(InputError, match="malformed JSON"):
        datasets.load(f)


def test_user_csv_and_jsonl(tmp_path):
    csv = tmp_path / "mine.csv"
    csv.write_text("id,text,toxicity,label,target_groups\n"
                   "1,hello there,1.5,neutral,women;lgbtq\n"
                   '2,bad words,4,hate,"[""women""]"\n')
    df = datasets.load(csv)
    assert df["target_groups"].tolist() == [["women", "lgbtq"], ["women"]]
    assert df["toxicity"].tolist() == [1.5, 4.0] and df["id"].tolist() == [1, 2]
    jl = tmp_path / "mine.jsonl"
    jl.write_text("\n".join(json.dumps(_row(id=i, text=f"s {i}")) for i in range(3)))
    assert datasets.load(jl)["id"].tolist() == [0, 1, 2]
    csv.write_text("id,text,toxicity,label,target_groups\n1,hello,2,neutral,\n")
    with pytest.raises(InputError, match=r"mine.csv: row 0 \(id 1\): target_groups"):
        datasets.load(csv)


@needs_toxigen
def test_sample_per_group_deterministic_union_nested():
    df = datasets.load("toxigen")
    a = datasets.sample_per_group(df, 20, seed=3)
    assert a.equals(datasets.sample_per_group(df, 20, seed=3))
    assert not a["id"].equals(datasets.sample_per_group(df, 20, seed=4)["id"])
    assert a.index.is_monotonic_increasing and a["id"].is_unique
    full = collections.Counter((g, lab) for gs, lab in zip(df["target_groups"], df["label"]) for g in gs)
    got = collections.Counter((g, lab) for gs, lab in zip(a["target_groups"], a["label"]) for g in gs)
    for key, total in full.items():
        assert got[key] >= min(20, total)
    # every kept row was among the first 20 of some (group, label) in the seeded order
    assert len(a) <= 2 * 20 * len(datasets.GROUPS)
    assert set(a["id"]) <= set(datasets.sample_per_group(df, 40, seed=3)["id"])
    assert len(datasets.sample_per_group(df, "all")) == len(df) == len(datasets.sample_per_group(df, None))
    with pytest.raises(InputError):
        datasets.sample_per_group(df, 0)
    with pytest.raises(InputError):
        datasets.sample_per_group(df, "some")


def test_sample_per_group_small_exact():
    import pandas as pd

    df = pd.DataFrame({"id": range(6), "text": list("abcdef"), "toxicity": 1.0,
                       "label": ["hate", "hate", "hate", "neutral", "neutral", "neutral"],
                       "target_groups": [["a"], ["a", "b"], ["b"], ["a"], ["b"], ["a", "b"]]})
    s = datasets.sample_per_group(df, 1, seed=0)
    for g in ("a", "b"):
        for lab in ("hate", "neutral"):
            assert ((s["label"] == lab) & s["target_groups"].map(lambda gs: g in gs)).sum() >= 1
    assert len(datasets.sample_per_group(df, 5)) == 6
