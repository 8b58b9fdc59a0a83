"""helpers.tables (read_table / write_table / check_writable) and the ``harms score`` command end to end."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers import tables as io
from helpers.cli import main
from helpers.errors import InputError

from conftest import SENTENCES

@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HARMS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HARMS_CACHE_CHUNK_SIZE", raising=False)


def write(path: Path, content) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, pd.DataFrame):
        content.to_parquet(path)
    else:
        path.write_text(content, encoding="utf-8")
    return path


# ---------------------------------------------------------------- read_table: bad input

BAD_INPUTS = [
    # name, file, content, expected fragments of the message (besides the file name)
    ("missing column", "a.csv", "id,sentence\n1,hello\n", ["no column 'text'", "columns: id, sentence"]),
    ("empty csv text", "b.csv", 'id,text\n1,hello\n2,world\n3,""\n', ["row 3", "empty text"]),
    ("blank csv cell", "b2.csv", "id,text\n1,hello\n2,\n", ["row 2", "empty text"]),
    ("whitespace json", "c.json", json.dumps([{"text": "ok"}, {"text": "  \t"}]), ["row 2", "whitespace-only"]),
    ("number json", "d.json", json.dumps([{"text": "ok"}, {"text": "fine"}, {"text": 42}]),
     ["row 3", "not a string", "int"]),
    ("null jsonl", "e.jsonl", '{"text": "a"}\n\n{"text": null}\n', ["line 3", "missing (null) text"]),
    ("list jsonl", "e2.jsonl", '{"text": ["a", "b"]}\n', ["line 1", "not a string", "list"]),
    ("malformed json", "f.json", '[{"text": "a"},\n {"text": }]', ["malformed JSON", "line 2"]),
    ("malformed jsonl", "g.jsonl", '{"text": "a"}\n{"text": "b"\n', ["line 2", "malformed JSON"]),
    ("json not a list", "h.json", '{"text": "a"}', ["list of objects"]),
    ("json row not object", "h2.json", '[{"text": "a"}, "b"]', ["row 2", "JSON object"]),
    ("not utf-8", "i.csv", b"\xff\xfe\x00text\n", ["not UTF-8"]),
    ("empty file", "j.csv", "", ["empty"]),
    ("unterminated quote", "k.csv", 'id,text\n1,"unterminated\n', ["cannot read CSV"]),
    ("garbage parquet", "l.parquet", b"not a parquet file at all", ["cannot read PARQUET"]),
    ("non-string parquet", "m.parquet", pd.DataFrame({"text": [1.5, 2.5]}), ["row 1", "not a string"]),
    ("null parquet", "n.parquet", pd.DataFrame({"text": ["a", None]}), ["row 2", "missing (null)"]),
    ("unknown extension", "o.txt", "hello\n", ["unknown input format", ".txt"]),
    ("no rows", "p.csv", "id,text\n", ["no rows"]),
]


@pytest.mark.parametrize("name,fname,content,fragments", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_one_clear_error_naming_file_and_row(tmp_path, name, fname, content, fragments):
    path = write(tmp_path / fname, content)
    with pytest.raises(InputError) as err:
        io.read_table(path)
    msg = str(err.value)
    assert str(path) in msg and "\n" not in msg
    for frag in fragments:
        assert frag in msg, (frag, msg)


def test_missing_and_directory_paths(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        io.read_table(tmp_path / "nope.csv")
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(InputError, match="is a directory"):
        io.read_table(tmp_path / "dir.csv")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path):
    path = write(tmp_path / "locked.csv", "text\nhello\n")
    path.chmod(0)
    with pytest.raises(InputError, match="locked.csv"):
        io.read_table(path)


def test_first_bad_row_reported_with_count_of_others(tmp_path):
    path = write(tmp_path / "x.csv", "id,text\n1,fine\n\n2, \n3,ok\n")   # blank lines are not rows
    with pytest.raises(InputError, match=r"row 2: whitespace-only text in column 'text'"):
        io.read_table(path)
    path = write(tmp_path / "y.json", json.dumps([{"text": ""}, {"text": 3}, {"text": None}]))
    with pytest.raises(InputError, match=r"row 1: empty text .*\(and 2 more bad rows\)"):
        io.read_table(path)


# ---------------------------------------------------------------- read_table / write_table: good input

def test_all_formats_read_the_same_table(tmp_path):
    df = pd.DataFrame({"id": [1, 2, 3], "sentence": ["NA", "null", "a, quoted \"one\""], "group": ["x", "y", "x"]})
    paths = {
        "csv": tmp_path / "t.csv", "json": tmp_path / "t.json", "jsonl": tmp_path / "t.jsonl",
        "parquet": tmp_path / "t.parquet"}
    df.to_csv(paths["csv"], index=False)
    paths["json"].write_text(df.to_json(orient="records"))
    paths["jsonl"].write_text(df.to_json(orient="records", lines=True))
    df.to_parquet(paths["parquet"])
    for fmt, p in paths.items():
        got = io.read_table(p, text_column="sentence")
        assert got["sentence"].tolist() == df["sentence"].tolist(), fmt     # "NA"/"null" stay words
        assert got["id"].tolist() == [1, 2, 3] and list(got.columns) == ["id", "sentence", "group"], fmt


def test_write_table_round_trip_and_unknown_extension(tmp_path):
    df = pd.DataFrame({"text": ["a", "b"], "n_tokens": [1, 2], "log_likelihood": [-1.5, -2.25]})
    for name in ("o.csv", "sub/o.parquet"):
        out = io.write_table(df, tmp_path / name)
        back = pd.read_csv(out) if out.suffix == ".csv" else pd.read_parquet(out)
        pd.testing.assert_frame_equal(back, df, check_dtype=False)
    with pytest.raises(InputError, match=r"o\.xlsx: unknown output format '\.xlsx'"):
        io.write_table(df, tmp_path / "o.xlsx")
    assert not (tmp_path / "o.xlsx").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


# ---------------------------------------------------------------- the CLI end to end

def _input(tmp_path, n=len(SENTENCES)) -> tuple[Path, pd.DataFrame]:
    df = pd.DataFrame({"id": range(n), "text": [SENTENCES[i % len(SENTENCES)] + f" {i}" for i in range(n)],
                       "group": ["a", "b"] * (n // 2) + ["a"] * (n % 2)})
    path = tmp_path / "in.csv"
    df.to_csv(path, index=False)
    return path, df


def _reference(model_dir, texts):
    """Scores computed directly (no cache, no CLI) for comparison."""
    from helpers import models
    from helpers.lm import scoring

    return scoring.sentence_scores(models.load(str(model_dir)), texts, progress=False)


def test_cli_csv_to_parquet_has_input_columns_and_scores(tmp_path, tiny_gpt2, capsys):
    inp, df = _input(tmp_path)
    out = tmp_path / "out.parquet"
    assert main(["score", "--model", str(tiny_gpt2), "--input", str(inp), "--output", str(out)]) == 0
    got = pd.read_parquet(out)
    assert list(got.columns) == ["id", "text", "group", "n_tokens", "log_likelihood", "perplexity"]
    pd.testing.assert_frame_equal(got[["id", "text", "group"]], df, check_dtype=False)
    ref = _reference(tiny_gpt2, df["text"].tolist())
    assert got["n_tokens"].tolist() == ref["n_tokens"].tolist()
    np.testing.assert_allclose(got["log_likelihood"], ref["log_likelihood"], rtol=1e-5)
    np.testing.assert_allclose(got["perplexity"], np.exp(-got["log_likelihood"] / got["n_tokens"]), rtol=1e-9)
    assert (got["log_likelihood"] < 0).all()


def test_cli_jsonl_to_csv_with_text_column(tmp_path, tiny_gpt2):
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"s": s, "k": i}) + "\n" for i, s in enumerate(SENTENCES[:3])))
    out = tmp_path / "out.csv"
    assert main(["score", "--model", str(tiny_gpt2), "--input", str(inp), "--output", str(out),
                 "--text-column", "s", "--no-cache"]) == 0
    got = pd.read_csv(out)
    assert list(got.columns) == ["s", "k", "n_tokens", "log_likelihood", "perplexity"]
    assert got["s"].tolist() == SENTENCES[:3]
    assert not (tmp_path / "cache" / "scores").exists()       # --no-cache wrote nothing


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("harms: error: ") and "Traceback" not in err[0]
    return err[0]


def test_cli_unknown_model_exit_2_one_line(tmp_path, capsys):
    inp, _ = _input(tmp_path, 2)
    code = main(["score", "--model", "no-such-model-xyz", "--input", str(inp), "--output", str(tmp_path / "o.csv")])
    assert code == 2
    assert "no-such-model-xyz" in _one_error_line(capsys)
    assert not (tmp_path / "o.csv").exists()


def test_cli_bad_input_and_bad_output_exit_2_before_loading(tmp_path, capsys):
    bad = write(tmp_path / "bad.csv", "id,text\n1,fine\n2, \n")
    assert main(["score", "--model", "no-such-model-xyz", "--input", str(bad), "--output", "o.csv"]) == 2
    line = _one_error_line(capsys)
    assert "bad.csv" in line and "row 2" in line
    good, _ = _input(tmp_path, 2)
    assert main(["score", "--model", "no-such-model-xyz", "--input", str(good),
                 "--output", str(tmp_path / "o.xlsx")]) == 2
    assert "unknown output format" in _one_error_line(capsys)


# ---------------------------------------------------------------- outputs checked before work

def _no_model(monkeypatch):
    """Fail the test if a model is loaded or a sentence scored."""
    from helpers import models
    from helpers.lm import scoring

    def refuse(*a, **k):
        raise AssertionError("a model was loaded before the outputs were checked")
    for mod, name in ((models, "load"), (models, "lazy"), (scoring, "score")):
        monkeypatch.setattr(mod, name, refuse)


def test_existing_output_refused_unless_overwrite(tmp_path, tiny_gpt2, capsys, monkeypatch):
    inp, df = _input(tmp_path, 3)
    out = write(tmp_path / "out.csv", "precious,results\n1,2\n")
    with monkeypatch.context() as m:
        _no_model(m)
        assert main(["score", "--model", str(tiny_gpt2), "--input", str(inp), "--output", str(out)]) == 2
    line = _one_error_line(capsys)
    assert str(out) in line and "exists; pass --overwrite to replace it" in line
    assert out.read_text() == "precious,results\n1,2\n"
    assert main(["score", "--model", str(tiny_gpt2), "--input", str(inp), "--output", str(out), "--overwrite"]) == 0
    assert pd.read_csv(out)["text"].tolist() == df["text"].tolist()


@pytest.mark.parametrize("target", ["blocker/out.csv", "blocker/sub/out.parquet", "adir.csv"])
def test_unwritable_output_found_before_loading_the_model(tmp_path, tiny_gpt2, capsys, monkeypatch, target):
    inp, _ = _input(tmp_path, 3)
    write(tmp_path / "blocker", "a regular file where a directory is needed")
    (tmp_path / "adir.csv").mkdir()
    _no_model(monkeypatch)
    assert main(["score", "--model", str(tiny_gpt2), "--input", str(inp), "--output", str(tmp_path / target),
                 "--no-cache"]) == 2
    line = _one_error_line(capsys)
    assert target in line and ("cannot create or write its directory" in line or "is a directory" in line)


def test_check_writable_leaves_nothing_behind(tmp_path):
    target = tmp_path / "new" / "deeper" / "o.parquet"
    assert io.check_writable(target) == target
    assert target.parent.is_dir() and list(target.parent.iterdir()) == []
    with pytest.raises(InputError, match="unknown output format"):
        io.check_writable(tmp_path / "o.txt")


@pytest.mark.parametrize("content, fragment", [
    (None, "not found"), (b"\xff\xfe word", "not UTF-8"), (b"\n  \n", "is empty")])
def test_read_lines_bad_files_name_the_file(tmp_path, content, fragment):
    p = tmp_path / "words.txt"
    if content is not None:
        p.write_bytes(content)
    with pytest.raises(InputError, match=fragment) as err:
        io.read_lines(p, "group list")
    assert str(err.value).startswith(f"group list file {p}")


def test_read_lines_strips_and_skips_blank_lines(tmp_path):
    p = tmp_path / "words.txt"
    p.write_text(" he \n\nshe\n  \nthey", encoding="utf-8")
    assert io.read_lines(p) == ["he", "she", "they"]


@pytest.mark.parametrize("content, fragment", [
    (None, "not found"), ("", "is empty"), ("a,b\n", "no rows"), ("a,c\n1,2\n", "missing column(s) b"),
    ('a,b\n"1,2\n', "cannot read")])
def test_read_csv_checked_bad_files(tmp_path, content, fragment):
    p = tmp_path / "t.csv"
    if content is not None:
        p.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        io.read_csv_checked(p, ["a", "b"], "test")


def test_read_csv_checked_keeps_cells_verbatim(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("a,b\nNA,\nnull,0\n", encoding="utf-8")
    df = io.read_csv_checked(p, ["a", "b"])
    assert df["a"].tolist() == ["NA", "null"] and df["b"].tolist() == ["", "0"]


# ---------------------------------------------------------------- harms fill --candidates --lowercase

def test_fill_candidates_lowercase_scores_the_lower_cased_template(tmp_path, tiny_gpt2):
    """--lowercase reaches the candidate scores (issue 24: it reached only --top-k): the output
    differs from a run without it and equals a run on the lower-cased template file."""
    words = tmp_path / "words.txt"
    words.write_text("capable\nkind\n")
    runs = {}
    for name, template, extra in (("cased", "Women are just as [MASK] as Men .", []),
                                  ("lowercase", "Women are just as [MASK] as Men .", ["--lowercase"]),
                                  ("lower file", "women are just as [MASK] as men .", [])):
        inp = tmp_path / f"{name}.csv"
        pd.DataFrame({"template": [template]}).to_csv(inp, index=False)
        out = tmp_path / f"{name} out.csv"
        assert main(["fill", "--model", str(tiny_gpt2), "--input", str(inp), "--candidates", str(words),
                     "--output", str(out), *extra]) == 0
        runs[name] = pd.read_csv(out)
    assert runs["lowercase"]["candidate"].tolist() == runs["lower file"]["candidate"].tolist() == ["capable", "kind"]
    np.testing.assert_allclose(runs["lowercase"]["log_prob"], runs["lower file"]["log_prob"], rtol=1e-6)
    assert np.abs(runs["lowercase"]["log_prob"] - runs["cased"]["log_prob"]).min() > 0.1
