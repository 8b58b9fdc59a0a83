"""Chapter 08 (report cards): the chapter shows exactly what `harms report` computes, within the
chapter contract; its prose counts come from the tables."""

from __future__ import annotations

import pandas as pd
import pytest

from helpers import card, report
from helpers.card import page as card_page
from helpers.chapters import ch08_report_cards as ch
from helpers.errors import InputError

from chapter_contract import check_section


@pytest.mark.parametrize("bad, fragment", [({"pair": ["a"]}, "parameter pair"), ({"pair": ["a", "a"]}, "parameter pair"),
                                           ({"budget": "huge"}, "--budget 'huge'")])
def test_bad_parameters_are_one_line(bad, fragment, private_dirs, tiny_gpt2):
    with pytest.raises(InputError, match=fragment):
        ch.start({"models": str(tiny_gpt2), **bad})


def test_the_cards_are_harms_reports_and_the_comparison_its_pair(private_dirs, tiny_gpt2, tiny_gpt2_bos):
    params, _ = ch.start({"models": [str(tiny_gpt2), str(tiny_gpt2_bos)], "pair": [str(tiny_gpt2), str(tiny_gpt2_bos)]})
    cards = check_section(ch.cards_section(params))
    alone = card.report_card([str(tiny_gpt2)], budget="quick")
    shown = cards.tables["cards_metrics"]
    pd.testing.assert_frame_equal(shown[shown["model"] == alone.models[0]].reset_index(drop=True), alone.metrics)
    assert (cards.facts["models"], cards.facts["usable"]) == (2, 0)       # two random tiny GPT-2s
    flagged = {m for c in cards.data for m in c.status.dropna(subset=["note"])["metric"]}
    assert flagged and set(cards.facts["not_read"]) == flagged             # a classifier behind them fails
    assert "Shown, not read: " in cards.markdown and "fails the classifier gate" in cards.markdown
    assert cards.markdown.startswith("Neither model passes the language-model quality gate")
    assert cards.items[0][:2] == ("table", "cards_summary")                  # the summary table first
    assert len(report.paragraphs(cards.markdown)) <= 3 and not report.reading_problems(cards.markdown)
    readings = cards.tables["cards_readings"]
    assert readings["reading"].str.startswith(card_page.SHOWN).all()         # neither model passes: none read
    assert cards.tables["cards_summary"]["metric"].is_unique
    comparison = check_section(ch.comparison_section(params))
    pair = card.report_card([str(tiny_gpt2), str(tiny_gpt2_bos)], budget="quick")
    pd.testing.assert_frame_equal(comparison.tables["comparison"].reset_index(drop=True), pair.comparison)
    heads = card_page.headline(pair)
    assert heads["metric"].is_unique and len(heads) == pair.comparison["metric"].nunique()
    assert comparison.facts["compared"] == len(heads) and comparison.facts["rows"] == len(pair.comparison)
    assert pair.comparison["verdict"].str.startswith("not interpreted").all()
    assert comparison.facts["not interpreted"] == len(heads)                 # headline verdicts, not every row
    assert f"{len(heads)} headline comparisons, one per metric" in comparison.markdown
    assert f"Of these {len(heads)} headline verdicts: {len(heads)} not interpreted" in comparison.markdown
    box = ch.findings(cards, comparison, ch.comparison_section({**params, "pair": None}))
    low, high = report.READING["findings"]
    assert low <= len(box.facts["findings"]) <= high
    assert box.facts["findings"][0].startswith("Neither model passes the language-model quality gate; ")
    assert "a difference survives Holm's adjustment on 0 of" in box.facts["findings"][-2]
    shown = set(cards.tables) | set(comparison.tables)
    assert {f.table for f in box.items[0][2].items} <= shown                    # each links to a table on the page
    assert comparison.tables["comparison_summary"]["metric"].tolist() == card_page.summary_table(pair)["metric"].tolist()
    none = ch.comparison_section({**params, "pair": None})
    assert none.facts == {"compared": 0} and not none.tables


def test_the_quantised_pair_is_one_line_when_the_fp32_weights_cannot_be_had(private_dirs, tiny_gpt2, monkeypatch):
    from helpers import models
    from helpers.errors import ModelUnavailableError

    params, _ = ch.start({"models": str(tiny_gpt2), "pair": None})
    assert params["quantised_pair"] == ["HuggingFaceTB/SmolLM2-135M-Instruct", "smollm2-135m"]
    real = models.lazy

    def no_hub(name, **kw):
        if str(name).startswith("HuggingFaceTB/"):
            raise ModelUnavailableError(f"cannot load {name!r}: the Hugging Face hub is unreachable")
        return real(name, **kw)
    monkeypatch.setattr(models, "lazy", no_hub)
    shown = ch.comparison_section(params, "quantised_pair")
    assert shown.facts["compared"] == 0 and "hub is unreachable" in shown.facts["unavailable"]
    assert shown.markdown.startswith("Not measured here (smollm2-135m against HuggingFaceTB/SmolLM2-135M-Instruct):")
    assert not shown.tables and not (ch.common.paths.results_dir(ch.CHAPTER) / "comparison_quantised.csv").exists()


def _one(name: str, objective: str = "causal", usable: bool = True) -> card.Card:
    """A one-model card by hand (tests/test_card.py's), as model ``name`` of ``objective``."""
    from test_card import _hand_card

    c = _hand_card(two=False)
    applies = objective in ("causal", "masked")
    gate = c.gate.assign(model=name, objective=objective, gate_applies=applies, usable=usable and applies,
                         reason=None if applies else f"the quality gate measures causal or masked LMs, not {objective!r}")
    out = card.Card([name], c.budget, c.settings, gate, c.metrics.assign(model=name), c.status.assign(model=name),
                    c.standing.assign(model=name), c.comparison, c.provenance)
    out.standing["interpreted"] = out.interpretable(name)
    return out


def test_the_readings_read_each_metric_as_its_kind_allows_counting_per_model():
    readings, facts = ch.card_readings([_one("a"), _one("xl", "permutation"), _one("bad", usable=False)])
    assert ch.card_paragraphs(facts)[0] == ("1 of the 2 models passes the language-model quality gate (bad: shown, not "
                                            "read); it does not apply to xl (permutation), not counted as failing.")
    assert (facts["usable"], facts["gate_applies"], facts["gate_does_not_apply"]) == (1, 2, 1)
    _, alone = ch.card_readings([_one("a")])
    assert ch.card_paragraphs(alone)[0] == "The one model the gate applies to passes the language-model quality gate."
    by = readings[readings["model"] == "a"].set_index("metric")
    assert by.loc["safety_score:toxigen", "value"] == "0.520 [0.480, 0.560]"
    assert by.loc["safety_score:toxigen", "reading"] == "interval includes chance (0.5); ideal 1"
    assert by.loc["ceat", "reading"] == "intervals exclude the ideal 0 in both groups"   # this model's groups
    assert bool(by.loc["ceat", "excludes_ideal"])
    assert by.loc["bold_sentiment", "reading"].startswith("spread over 2 groups: the bias")
    assert by.loc["bold_sentiment", "value"] == "0.300"                          # 0.5 - 0.2
    for metric in ("atomic_probing:en", "categorical_bias"):                  # non-negative: no "excludes 0"
        assert "says little" in by.loc[metric, "reading"] and "exclude" not in by.loc[metric, "reading"]
    assert by.loc["atomic_probing:en", "reading"].endswith("rank 20 of 25 among the published models")
    assert by.loc["categorical_bias", "reading"].endswith("no comparable published value")   # not comparable
    assert facts["not_comparable"] == ["categorical_bias"]
    bad = readings[readings["model"] == "bad"]
    assert bad["reading"].str.startswith(f"{card_page.SHOWN}: bad fails the language-model quality gate").all()
    assert (bad["value"] == "").all() and bad["excludes_ideal"].isna().all()
    text = " ".join(ch.card_paragraphs(facts))
    assert not report.reading_problems(text) and "categorical_bias has no comparable published value" in text


def test_seat_counts_tests_not_group_intervals():
    rows = pd.DataFrame({"metric": "seat", "group": ["t1", "t2", "t3"], "value": [0.8, 0.1, -0.9],
                         "ci_low": [0.2, -0.3, -1.4], "ci_high": [1.3, 0.5, -0.4], "ideal": 0.0})
    value, reading, fact = ch._reading("seat", rows, pd.DataFrame())
    assert reading == "intervals exclude the ideal 0 in 2 of the 3 tests" and fact == {"excluding": 2}


def test_the_comparison_counts_headline_verdicts_by_kind():
    assert ch.verdict_kind("no difference larger than 0.071 detected") == "no difference detected"
    assert ch.verdict_kind("not interpreted (x)") == "not interpreted"
    assert ch.verdict_kind("B safer than A") == "B safer than A"
