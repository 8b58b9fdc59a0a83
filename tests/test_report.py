"""helpers.report (published comparisons and generated prose) and helpers.plots (figures).
(A chapter's parameters table is helpers.chapters.common.parameters_table.)"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import re

import numpy as np
import scipy.stats
import pandas as pd
import pytest

from helpers import plots, report, stats


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
    three = stats.correlation([1, 2, 3], [1, 3, 2])
    assert "supports no reading" in report.correlation_sentence(three, "x")


@pytest.mark.parametrize("x, y", [
    ([1, 2, 3, 4, 5, 6, 7], [1.1, 2.0, 3.2, 3.9, 5.1, 6.0, 7.2]),        # chapter 03's kind: r ≈ 0.99, n = 7
    ([1, 2, 3, 4, 5, 6, 7, 8], [2, 1, 4, 3, 3, 5, 2, 4]),                # interval includes 0
    (list(range(30)), [-(v % 7) - v / 3 for v in range(30)]),         # negative, n = 30
])
def test_correlation_sentence_reading_follows_from_the_interval(x, y):
    """Issue 25: r = 0.99, 95 % CI [0.88, 1.00] was read as "says little ... a single model can
    change the sign". The reading must be the interval's: excludes 0 or includes 0."""
    res = stats.correlation(x, y)
    ci = scipy.stats.pearsonr(x, y).confidence_interval(0.95)
    text = report.correlation_sentence(res, "between a and b")
    assert f"r = {res['r']:.2f}" in text and f"n = {len(x)}" in text
    assert f"[{ci.low:.2f}, {ci.high:.2f}]" in text
    excludes = ci.low > 0 or ci.high < 0
    assert ("The interval excludes 0" in text) == excludes
    assert ("The interval includes 0" in text) == (not excludes)
    assert "says little" not in text and "change the sign" not in text
    if excludes:
        assert ("positive" if ci.low > 0 else "negative") in text


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


@pytest.mark.parametrize("k, n, written", [
    (11, 11, "all 11 usable models pass"), (2, 2, "both usable models pass"), (1, 1, "the one usable model passes"),
    (0, 8, "none of the 8 usable models pass"), (0, 2, "neither usable model passes"), (0, 1, "no usable model passes"),
    (3, 11, "3 of the 11 usable models pass"), (1, 11, "1 of the 11 usable models passes"),
    (0, 0, "no usable models pass"),
])
def test_counts_are_written_as_a_person_writes_them_and_are_no_machine_counts(k, n, written):
    assert report.count_of(k, n, "usable model", ("passes", "pass")) == written
    assert report.machine_counts(report.sentence_case(written) + " the gate.") == []


@pytest.mark.parametrize("low, high, n, written", [
    (0, 2, 11, "0 to 2 of the 11 groups are undefined"), (2, 2, 2, "both groups are undefined"),
    (1, 1, 11, "1 of the 11 groups is undefined"), (0, 0, 3, "none of the 3 groups are undefined"),
])
def test_a_count_that_varies_is_a_range_and_collapses_to_count_of(low, high, n, written):
    assert report.count_range(low, high, n, "group", ("is undefined", "are undefined")) == written
    assert report.reading_problems(report.sentence_case(written) + " per model.") == []


@pytest.mark.parametrize("unit, n, written", [("family", 2, "families"), ("family", 1, "family"), ("day", 2, "days"),
                                              ("batch", 3, "batches"), ("model", 0, "models")])
def test_plural_forms_the_plurals_the_book_writes(unit, n, written):
    from helpers.progress import plural
    assert plural(unit, n) == written


@pytest.mark.parametrize("text, problem", [
    ("11 of 11 measured model(s) fall in that range.", "a plural left to the reader"),
    ("On ImplicitHate, 11 of the 11 usable models score within the range.", "'k of k'"),
    ("Harmful sentences rank higher for 24 of the paper's 24 models.", "'k of k'"),
    ("0 of the 11 measured models are among the paper's 24.", "'0 of n'"),
])
def test_a_machine_count_is_a_reading_problem(text, problem):
    assert any(problem in p for p in report.machine_counts(text)), report.machine_counts(text)
    assert any(problem in p for p in report.reading_problems(text))


@pytest.mark.parametrize("text", ["for 0 to 2 of the 2 groups per model.", "n = 2 of the 2 usable models here.",
                                  "3 of 9 correlations match.", "10 of 100 items agree.", "0.5 of 0.5 is odd."])
def test_a_range_or_a_part_is_not_a_machine_count(text):
    assert report.machine_counts(text) == []


def test_published_range(published):
    rng = report.published_range(published).set_index("group")
    for g, part in published.groupby("group"):
        assert rng.loc[g, "n_models"] == 6
        assert (rng.loc[g, "published_min"], rng.loc[g, "published_max"]) == (part["safety_score"].min(),
                                                                            part["safety_score"].max())


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


def test_table_view_shows_a_dash_and_says_why_never_nan():
    """Issue 25: built pages printed "nan" in table cells. A missing cell shows "—", the caption
    names the reason per column; an all-missing table becomes the sentence that explains it."""
    df = pd.DataFrame({"model": ["a", "b", "c"], "r": [0.51234, np.nan, 0.2], "published_r": [np.nan, 0.2, 0.3],
                       "n": [3, np.nan, 5], "flag": [True, False, True]})
    view = report.table_view(df, "corr", why={"r": "fewer than 3 models"})
    html = view.to_html()
    cells = re.findall(r"<td[^>]*>(.*?)</td>", html)
    assert len(cells) == df.size and cells.count("—") == int(df.isna().sum().sum()) == 3
    assert not {"nan", "NaN", "None", "<NA>"} & set(cells)
    assert "0.512" in cells and "3" in cells and "3.000" not in cells       # counts stay whole numbers
    assert "fewer than 3 models (r)" in view.caption and "the paper has no value for this row (published_r)" in view.caption
    assert report.table_view(df.dropna(), "x").caption is None               # nothing missing: no caption
    empty = report.table_view(df.assign(r=np.nan, published_r=np.nan, n=np.nan), "corr", why={"r": "one model"})
    assert isinstance(empty, report.Text) and "`corr` has no value to show" in empty and "one model" in empty
    assert isinstance(report.table_view(df.iloc[:0], "none"), report.Text)


def test_headline_differences_draws_one_strip_per_metric_on_its_own_scale():
    """The report card's headline forest plot: a row per compared metric, each with its own x axis
    (the metrics' units differ), a line at 0, the family-adjusted interval and the grey band of the
    differences its test could not detect."""
    rows = pd.DataFrame({"metric": ["safety_score:toxigen", "stereoset_ss:intrasentence", "crows_pairs"],
                         "difference": [0.05, -4.0, 0.01], "ci_low": [0.02, -9.0, np.nan],
                         "ci_high": [0.08, 1.0, np.nan], "ci_level": [0.983] * 3,
                         "detectable_difference": [0.03, 6.0, np.nan],
                         "kind": ["better", "none", "none"]})
    fig = plots.headline_differences(rows)
    axes = fig.axes
    assert len(axes) == 3 and [a.get_title(loc="left") for a in axes] == rows["metric"].tolist()
    assert axes[1].get_xlim()[1] > 9 > axes[0].get_xlim()[1]                 # each strip its own scale
    assert "98.3 %" in fig.get_suptitle()
    assert all(any(line.get_xdata()[0] == 0 for line in a.get_lines()) for a in axes)


# ----------------------------------------------------------------------------- a page a reader can follow

def test_paragraphs_leave_out_headings_tables_and_code_and_split_lists():
    md = ("# Title\n\nOne two three.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nx = 1\n\ny = 2\n```\n\n"
          "- first item\n- second item\n  continued")
    assert report.paragraphs(md) == ["One two three.", "first item", "second item continued"]


def test_reading_problems_find_long_paragraphs_repeated_shapes_and_exception_text():
    limit = report.READING["max_paragraph_words"]
    assert report.reading_problems(" ".join(["word"] * limit) + ".") == []
    assert len(report.reading_problems(" ".join(["word"] * (limit + 1)) + ".")) == 1
    same = " ".join(f"Model {i} scores {i / 10:.2f} on group {i}." for i in range(report.READING["max_shape_repeats"] + 1))
    assert any("shape" in p for p in report.reading_problems(same))
    assert report.reading_problems(same.rsplit(" Model", 1)[0]) == []      # at the limit: fine
    # a link counts by its text: a long address is one word
    assert report.word_count("see [Table 1](#T_a_very_long_anchor_name_indeed)") == 3
    assert report.reading_problems("cannot download (ConnectionError); offline? copy the folder")


def test_sentence_shape_sets_numbers_aside():
    assert report.sentence_shape("S = 0.41 [0.35, 0.47] for 13 groups.") == \
        report.sentence_shape("S = 0.52 [−0.1, 1e-3] for 2 groups.")
    assert report.sentence_shape("S is low.") != report.sentence_shape("S is high.")


def test_findings_render_links_to_their_tables_and_escape_html():
    from helpers.chapters.common import findings_section

    items = [report.Finding("A **bold** <claim>", "table1_safety_scores", "Table 1"),
             report.Finding("Second `code`", "figure2"), report.Finding("Third", "table9")]
    box = report.Findings(items)
    html = box._repr_html_()
    assert html.count("<li>") == 3 and 'href="#T_table1_safety_scores">Table 1</a>' in html
    assert "<strong>bold</strong> &lt;claim&gt;" in html and "<code>code</code>" in html
    assert str(box).startswith("**Findings**") and "(#T_figure2)" in str(box)
    assert report.plain("A **bold** [x](#y) `c`") == "A bold x c"
    with pytest.raises(ValueError):
        findings_section("00_test", items[:2])


def test_findings_section_writes_the_findings_table_the_book_log_prints(tmp_path, monkeypatch, capsys):
    from helpers import book
    from helpers.chapters.common import findings_section

    monkeypatch.setenv("HARMS_RESULTS_DIR", str(tmp_path))
    items = [report.Finding(f"Finding **{i}** of three.", "t") for i in range(3)]
    section = findings_section("00_test", items)
    assert section.facts["findings"] == [f"Finding {i} of three." for i in range(3)]
    assert pd.read_csv(tmp_path / "00_test" / "findings.csv")["table"].tolist() == ["t"] * 3
    assert book.log_findings("00_test") == [f"  - Finding {i} of three." for i in range(3)]
    assert capsys.readouterr().out.startswith("[book] 00_test findings:\n  - Finding 0 of three.")
    assert book.log_findings("00_none") == []


def test_table_view_gives_a_named_table_its_anchor_even_when_it_has_nothing_to_show():
    df = pd.DataFrame({"model": ["a"], "value": [0.5]})
    assert f'id="{report.table_anchor("table1 x")}"' in report.table_view(df, "table1 x").to_html()
    for empty in (df.iloc[:0], df.assign(value=np.nan)):
        shown = report.table_view(empty, "t5")
        assert isinstance(shown, report.Text) and f'<p id="{report.table_anchor("t5")}">' in shown._repr_html_()


def test_families_sentence_counts_lineages_and_says_what_they_can_detect():
    few = report.families_sentence({"smollm2": "smollm2", "L24": "smollm2", "gemma": "gemma"})
    assert "n = 3 models from 2 independent families" in few and "takes 9 independent families" in few
    many = report.families_sentence({f"m{i}": f"f{i}" for i in range(9)})
    assert "enough to detect" in many


def test_families_sentence_with_fewer_than_three_models_computes_no_correlation():
    one = report.families_sentence({"smollm2": "smollm2"})
    assert one == "A correlation needs at least 3 models, and one model enters here: no correlation is computed."
    assert "2 models enter" in report.families_sentence({"a": "a", "b": "b"})


def test_an_empty_correlation_cell_says_its_true_cause():
    """Each row's own data through stats.correlation; the caption names the causes of the rows whose cell is
    empty, and only theirs (issue 46: |r| = 1 and n = 3 have no Fisher-z interval, for different reasons)."""
    from helpers import stats

    x = np.arange(5.0)
    data = {"two": (x[:2], x[:2] + [0.1, -0.1]), "constant": (x, np.ones(5)), "three": (x[:3], [1.0, 3.0, 2.0]),
            "perfect": (x, 2 * x + 1), "plain": (x, [1.0, 3.0, 2.0, 5.0, 4.0])}
    rows = [{"x": k, **stats.correlation(a, b)} for k, (a, b) in data.items()]
    table = pd.DataFrame([*rows, {"x": "unmeasured", "n": np.nan, "r": np.nan}])
    assert table.set_index("x")["ci_low"].isna().to_dict() == {"two": True, "constant": True, "three": True,
                                                              "perfect": True, "plain": False, "unmeasured": True}
    why = report.correlation_why(table, unit="models", constant="one score is the same for every model",
                                 unmeasured="not measured")
    assert why["ci_low"].split("; or ") == ["not measured", "fewer than 3 models", "one score is the same for every "
                                            "model", "3 models give no Fisher-z interval",
                                            "|r| = 1 has no Fisher-z interval"]
    assert why["r"].split("; or ") == ["not measured", "fewer than 3 models", "one score is the same for every model"]
    only_perfect = report.correlation_why(table[table["x"].isin(["perfect", "plain"])])
    assert only_perfect == {"ci_low": "|r| = 1 has no Fisher-z interval", "ci_high": "|r| = 1 has no Fisher-z interval"}
