"""Chapter 08 (report cards): the chapter shows exactly what `harms report` computes, within the
chapter contract; its prose counts come from the tables."""

from __future__ import annotations

import pandas as pd
import pytest

from helpers import card
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
    assert "atomic_probing:en" in cards.facts["not_read"]                 # MLMA English: its classifier fails
    assert "Shown, not read (a classifier behind them fails the classifier gate): " in cards.markdown
    assert cards.markdown.startswith("0 of 2 models pass the language-model quality gate")
    comparison = check_section(ch.comparison_section(params))
    pair = card.report_card([str(tiny_gpt2), str(tiny_gpt2_bos)], budget="quick")
    pd.testing.assert_frame_equal(comparison.tables["comparison"].reset_index(drop=True), pair.comparison)
    assert comparison.facts["compared"] == len(pair.comparison)
    assert pair.comparison["verdict"].str.startswith("not interpreted").all()
    flagged = pair.status.dropna(subset=["note"])["metric"]                # a classifier behind them fails too
    assert comparison.facts["not interpreted (a model fails the quality gate)"] == (
        ~pair.comparison["metric"].isin(flagged)).sum()
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
