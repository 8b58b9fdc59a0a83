"""The pages a reader meets first (issue 37): docs/CLI.md is rendered from the argument parser and
must equal the committed file; the README stays short and links every page the rest moved to; the
README and each chapter name the four papers that the code calls seeds 000-003."""

from __future__ import annotations

import re
import subprocess
import sys

import nbformat
import pytest

from helpers import docs
from helpers.paths import REPO_ROOT

CLI_MD = REPO_ROOT / "docs" / "CLI.md"
README = REPO_ROOT / "README.md"
#: Each chapter's paper: the first author's surname and the year (paper 003 prints no year).
PAPERS = {"01": ("Hosseini", "2023"), "02": ("Hosseini", "2023"), "03": ("Hosseini", "2023"),
          "04": ("Hosseini", "2023"), "05": ("Potala", None), "06": ("Cao", "2022"), "07": ("Ousidhoum", "2021")}


def test_committed_cli_reference_is_the_parser_rendered():
    assert CLI_MD.is_file(), f"docs/CLI.md is missing: {docs.COMMAND}"
    assert CLI_MD.read_text(encoding="utf-8") == docs.cli_reference(), (
        f"docs/CLI.md is stale (the parser changed): regenerate it with `{docs.COMMAND}`")


def test_cli_reference_names_every_subcommand_and_option():
    from helpers.cli import build_parser

    text = docs.cli_reference()
    assert docs.COMMAND in text.split("\n## ", 1)[0]                     # how to regenerate: in the header
    parser = build_parser()
    subs = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, sub in subs.choices.items():
        assert f"## `harms {name} --help`" in text, name
        for action in sub._actions:
            for flag in action.option_strings:
                assert flag in text, (name, flag)


def test_cli_reference_does_not_depend_on_the_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "37")
    narrow = docs.cli_reference()
    monkeypatch.setenv("COLUMNS", "250")
    assert docs.cli_reference() == narrow


def test_module_command_prints_the_cli_reference():
    out = subprocess.run([sys.executable, "-m", "helpers.docs"], capture_output=True, text=True,
                         cwd=REPO_ROOT, timeout=120)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout == docs.cli_reference()


def test_readme_is_short_and_links_where_the_rest_moved():
    text = README.read_text(encoding="utf-8")
    assert len(text) <= 12_000, f"README.md has {len(text)} characters (at most 12,000)"
    for page in ("data/README.md", "docs/REPORT_CARD.md", "docs/CLI.md", "docs/ARCHITECTURE.md",
                 "benchmarks/RESULTS.md"):
        assert f"]({page}" in text, page
        assert (REPO_ROOT / page).is_file(), page
    for command in ("make book", "make test", "make lab"):
        assert command in text, command


def test_report_card_page_keeps_its_screenshot_and_sample_output():
    text = (REPO_ROOT / "docs" / "REPORT_CARD.md").read_text(encoding="utf-8")
    for image in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text):
        assert (REPO_ROOT / "docs" / image).is_file(), image
    assert "images/report_card.png" in text and "```text" in text


@pytest.mark.parametrize("path", [README, REPO_ROOT / "data" / "README.md", REPO_ROOT / "docs" / "CLI.md",
                                  REPO_ROOT / "docs" / "REPORT_CARD.md", REPO_ROOT / "helpers" / "paths.py",
                                  REPO_ROOT / "helpers" / "datasets" / "registry.py",
                                  REPO_ROOT / "helpers" / "datasets" / "readme.py",
                                  REPO_ROOT / "helpers" / "published" / "tables.csv"])
def test_no_reader_facing_text_names_the_build_machines_folders(path):
    """A user has no ``../shared``: the text names the upstream source or the paper instead."""
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"\.\./shared|shared/(data|seeds)|/work/", text), path.name


def test_readme_says_what_the_four_papers_are_and_how_it_refers_to_them():
    text = README.read_text(encoding="utf-8")
    for author, year in PAPERS.values():
        assert author in text and (year is None or year in text), author
    assert "seed 000" in text or "seeds 000" in text


@pytest.mark.parametrize("chapter", sorted(PAPERS))
def test_each_chapter_names_its_paper_at_the_top(chapter):
    """The first line after the chapter's title names the paper it reproduces (author and year)."""
    path = next((REPO_ROOT / "notebooks").glob(f"{chapter}_*.ipynb"))
    first = next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    lines = [ln for ln in first.source.splitlines() if ln.strip()]
    assert lines[0].startswith("# ")
    opening = " ".join(lines[1:3])
    author, year = PAPERS[chapter]
    assert author in opening and (year is None or year in opening), (path.name, opening)
    assert not opening.lstrip("*").lower().startswith("seed"), (path.name, opening)
