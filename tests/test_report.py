"""helpers.report (published comparisons and generated prose) and helpers.plots (figures).
(A chapter's parameters table is helpers.chapters.common.parameters_table.)"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from helpers import plots, report


@pytest.fixture
def published():
    rng = np.random.default_rng(1)
    return pd.DataFrame([{"model": f"P{i}", "group": g, "safety_score": rng.uniform(0.2, 0.45)}
                         for i in range(6) for g in ("asian", "women", "jewish")])


def test_side_by_side_difference_and_unmatched_rows():
    m = pd.DataFrame({"model": ["a", "b"], "safety_score": [0.4, 0.3]})
    p = pd.DataFrame({"model": ["a", "c"], "safety_score": [0.35, 0.2]})
    out = report.side_by_side(m, p, on=["model"]).set_index("model")
    assert out.loc["a", "difference"] == pytest.approx(0.05)
    assert np.isnan(out.loc["b", "published"]) and np.isnan(out.loc["c", "measured"])


def test_against_range_matches_pandas_quantities(published):
    measured = pd.DataFrame({"model": "m", "group": ["asian", "women"], "safety_score": [0.9, 0.3]})
    out = report.against_range(measured, published).set_index("group")
    for g in ("asian", "women"):
        ref = published.loc[published["group"] == g, "safety_score"]
        assert out.loc[g, "published_median"] == pytest.approx(ref.median())
        assert out.loc[g, "n_models"] == 6
        assert out.loc[g, "within_published_range"] == (ref.min() <= out.loc[g, "safety_score"] <= ref.max())
    assert not out.loc["asian", "within_published_range"]


def test_correlation_sentence_says_when_n_is_too_small():
    assert "cannot be computed" in report.correlation_sentence({"n": 2, "r": np.nan}, "x")
    small = {"n": 5, "r": 0.9, "p_value": 0.04, "ci_low": 0.1, "ci_high": 0.99}
    text = report.correlation_sentence(small, "between a and b")
    assert "r = 0.90" in text and "n = 5" in text and "says little" in text
    big = {"n": 24, "r": 0.68, "p_value": 3e-4, "ci_low": 0.38, "ci_high": 0.85}
    assert "says little" not in report.correlation_sentence(big, "x")


def test_safety_summary_reflects_the_numbers(published):
    measured = pd.DataFrame({"model": "m", "group": ["asian", "women", "jewish"],
                             "safety_score": [0.6, 0.3, 0.3], "significant": [True, False, True]})
    text = report.safety_summary(measured, published)
    assert "Unlike the paper" in text and "1 of 3 scores are not significantly" in text
    measured["safety_score"] = 0.3
    assert "As in the paper, every measured score is below 0.5" in report.safety_summary(measured, published)


def test_figures_have_expected_artists(published):
    counts = pd.DataFrame({"group": ["asian", "women"], "hate": [3, 5], "neutral": [4, 1]})
    fig = plots.group_counts_bar(counts)
    heights = sorted(p.get_height() for p in fig.axes[0].patches)
    assert heights == [1, 3, 4, 5]
    both = pd.concat([published.assign(source="published"),
                      pd.DataFrame({"model": "m", "group": ["asian"], "safety_score": [0.5], "source": "measured"})])
    fig = plots.safety_boxplot(both)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Asian", "Jewish", "Women"]
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {"published (6 models)", "measured (1 model)"}
    fig = plots.measured_vs_published(pd.DataFrame({"model": ["a", "b"], "published": [0.3, 0.4],
                                                    "measured": [0.35, 0.38]}))
    assert len(fig.axes[0].collections[0].get_offsets()) == 2


def test_text_is_a_string_shown_as_markdown():
    text = report.Text("**3 of 4** scores")
    assert isinstance(text, str) and text == "**3 of 4** scores"
    assert text._repr_markdown_() == "**3 of 4** scores"
    assert not hasattr(report, "parameters_table")          # lives in helpers.chapters.common


def test_number_formats():
    assert report.fmt_ci(0.41234, 0.371, 0.4551) == "0.412 [0.371, 0.455]"
    assert report.fmt_ci(0.41234, np.nan, np.nan) == "0.412"          # no interval
    assert report.fmt_ci(np.nan, 0.1, 0.2) == "–"
    assert report.fmt_mean_sd(4.2339, 1.1858) == "4.23 ± 1.19" and report.fmt_mean_sd(np.nan, 1) == "–"
    assert report.format_number(None) == "–" and report.format_number(0.12345, 2) == "0.12"


def test_published_range_and_top_groups(published):
    rng = report.published_range(published).set_index("group")
    for g, part in published.groupby("group"):
        assert rng.loc[g, "n_models"] == 6
        assert (rng.loc[g, "published_min"], rng.loc[g, "published_max"]) == (part["safety_score"].min(),
                                                                            part["safety_score"].max())
    medians = published.groupby("group")["safety_score"].median().sort_values(ascending=False)
    assert report.top_groups(published, 2) == list(medians.index[:2])


def test_log_perplexity_sentence_counts():
    ours = pd.DataFrame({"model": ["a", "a", "b", "b"], "label": ["hate", "neutral"] * 2,
                         "mean": [2.5, 2.0, 9.0, 9.5]})
    pub = pd.DataFrame({"benign_mean": [1.9, 2.1, 3.0], "harmful_mean": [2.2, 2.4, 2.9]})
    text = report.log_perplexity_sentence(ours, pub)
    assert "range from 2.00 to 9.50" in text and "from 1.90 to 3.00" in text
    assert "1 of 2 measured models lie within the published range" in text and "Above it: b" in text
    assert "higher mean log-perplexity for 1 of 2 measured models, and for 2 of the paper's 3" in text


def test_one_markdown_type():
    """Prose is report.Text everywhere: a Section turns its strings into it, and no chapter module
    keeps a second Markdown wrapper (common.markdown, ch05-07's ``_md`` returned IPython objects)."""
    import importlib
    import pkgutil

    import helpers.chapters
    from helpers.chapters.common import Section

    for info in pkgutil.iter_modules(helpers.chapters.__path__):
        module = importlib.import_module(f"helpers.chapters.{info.name}")
        assert not hasattr(module, "_md") and not hasattr(module, "markdown"), info.name
    kind, _, value = Section("**3 of 4** scores").items[0]
    assert kind == "markdown" and type(value) is report.Text and value._repr_markdown_() == "**3 of 4** scores"
