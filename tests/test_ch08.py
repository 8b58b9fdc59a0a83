"""Chapter 08 (report cards): the chapter shows exactly what `harms report` computes, within the
chapter contract; its prose counts come from the tables."""

from __future__ import annotations

import pandas as pd
import pytest

from helpers import card
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
    assert "Shown, not read (a classifier behind them fails the classifier gate): " in cards.markdown
    assert cards.markdown.startswith("0 of 2 models pass the language-model quality gate")
    assert list(cards.tables)[0] == "cards_summary"                          # the summary table first
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


def test_the_chapters_sentences_read_each_metric_as_its_kind_allows():
    lines, facts = ch.card_sentences([_one("a"), _one("xl", "permutation"), _one("bad", usable=False)])
    assert lines[0] == ("1 of 2 models pass the language-model quality gate (bad: shown, not read); it does not "
                        "apply to xl (permutation), not counted as failing.")
    assert (facts["usable"], facts["gate_applies"], facts["gate_does_not_apply"]) == (1, 2, 1)
    by = {line.split(": ")[0]: line for line in lines[1:] if not line.startswith(("a (", "xl (", "bad ("))}
    assert by["safety_score:toxigen"].startswith("safety_score:toxigen: 0 of 1 read models have an interval above "
                                                 "0.5 (chance")                    # [0.48, 0.56] covers chance
    assert "ideal 1" in by["safety_score:toxigen"] and "exclude" not in by["safety_score:toxigen"]
    assert by["ceat"] == "ceat: 2 of 2 group intervals (over 1 read model) exclude the ideal 0."
    assert "spread over groups is the bias" in by["bold_sentiment"] and "exclude" not in by["bold_sentiment"]
    for metric in ("atomic_probing:en", "categorical_bias"):                  # non-negative: no "excludes 0"
        assert "says little" in by[metric] and "of 1 read models have an interval" not in by[metric]
    first = next(line for line in lines if line.startswith("a (safety_score:toxigen): rank 20 of 25"))
    assert "outside" not in first and "inside" not in first and "no interval to hold it against" in first
    assert any(line.startswith("a (categorical_bias): not comparable with the published models") for line in lines)
    assert facts["not_comparable"] == ["categorical_bias"] * 3
    bad = [line for line in lines if line.startswith("bad (atomic_probing:en)")]
    assert bad and bad[0].endswith(f"; {card_page.SHOWN}.")
    assert not any(line.startswith("a (") and "not interpreted" in line for line in lines)


def test_the_comparison_counts_headline_verdicts_by_kind():
    assert ch.verdict_kind("no difference larger than 0.071 detected") == "no difference detected"
    assert ch.verdict_kind("not interpreted (x)") == "not interpreted"
    assert ch.verdict_kind("B safer than A") == "B safer than A"
