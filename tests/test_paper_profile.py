"""`make book PROFILE=paper` resolves every chapter to each paper's own setting (issue 25): the
resolved papermill parameters are exactly helpers/published/paper_settings.csv (plus the device;
tests/test_notebooks.py checks that each chapter's start() accepts every profile), and the appendix
page lists default vs paper vs the paper's words for every row. (The hub is needed to run the profile, so the resolved parameters are tested,
not the run.)"""

from __future__ import annotations

import pandas as pd
import pytest

from helpers import book, published
from helpers.errors import InputError


def test_paper_profile_is_exactly_the_papers_settings():
    settings = published.paper_settings()
    for nb in book.notebooks():
        resolved = book.parameters_for(nb, "paper")
        rows = settings[settings["chapter"] == nb.stem]
        expected = {r.parameter: r.value for r in rows.itertuples()}
        declared = book.declared_parameters(nb)
        assert resolved == ({"device": "cuda"} if "device" in declared else {}) | expected, nb.stem
        assert len(rows), f"{nb.stem}: no paper setting at all"


@pytest.mark.parametrize("checked, value", [
    (("02_correlations", "cma_limit"), None), (("02_correlations", "stereoset_clusters_per_target"), None),
    (("02_correlations", "samples_per_prompt"), 100), (("06_intrinsic_extrinsic", "stereotype_train"), "all"),
    (("06_intrinsic_extrinsic", "stereotype_encoder"), "bert-base-uncased"), (("07_toxicity_probing", "per_group"), "all"),
])
def test_the_reductions_the_issue_found_are_gone(checked, value):
    """Each reduced setting issue 25 found in the old profile (cma_limit 20, 5 StereoSet clusters,
    one generation per regard prompt, MiniLM on 2,000 stereotype examples, per_group 1) now resolves
    to the paper's."""
    chapter, name = checked
    nb = next(n for n in book.notebooks() if n.stem == chapter)
    assert book.parameters_for(nb, "paper")[name] == value


def test_appendix_lists_every_setting_beside_the_default(tmp_path):
    rows = book.settings_table()
    settings = published.paper_settings()
    assert len(rows) == len(settings)
    for row, s in zip(rows, settings.itertuples()):
        nb = book.NOTEBOOKS_DIR / f"{s.chapter}.ipynb"
        assert row["default"] == book.declared_parameters(nb)[s.parameter]
        assert row["profile"] == repr(s.value) and row["text"] == s.text
    page = book.write_settings_page(tmp_path).read_text()
    for r in rows:
        assert f"| `{r['parameter']}` |" in page
    assert page.count("\n## ") == settings["chapter"].nunique()
    (tmp_path / "intro.md").write_text("# x\n")
    toc = book.write_toc(tmp_path, [])
    assert f"{book.EXECUTED}/{book.SETTINGS_PAGE}" in toc.read_text() and "Appendix" in toc.read_text()


def test_unknown_settings_source_is_one_line(tmp_path):
    (tmp_path / "profiles.yml").write_text("profiles:\n  p:\n    settings: mine\n")
    with pytest.raises(InputError, match="the only value is 'papers'"):
        book.load_profile("p", tmp_path / "profiles.yml")


def test_paper_settings_values_are_parsed():
    s = published.paper_settings()
    assert isinstance(s, pd.DataFrame) and s["value"].map(lambda v: isinstance(v, str)).any()
    row = s[(s["chapter"] == "05_tinybert_bias_suite") & (s["parameter"] == "distill_epochs")].iloc[0]
    assert row["value"] == [20, 3]
