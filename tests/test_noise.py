"""Seed 001 appendix H (helpers.metrics.noise): word swap and deletion counted and checked
against the text, seeded per cell, and the Table 7 experiment against a direct loop."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from helpers.errors import InputError
from helpers.metrics import noise

TEXT = "the person was well-known for her work as a feminist activist and a writer."


def _is_subsequence(short: list[str], long: list[str]) -> bool:
    it = iter(long)
    return all(w in it for w in short)


@pytest.mark.parametrize("rate", [0.05, 0.1, 0.15, 0.2, 0.5])
def test_deletion_removes_that_share_of_words_keeping_the_order(rate):
    words = TEXT.split()
    for s in range(20):
        out = noise.perturb(TEXT, rate, "deletion", np.random.default_rng(s)).split()
        assert len(out) == len(words) - int(np.floor(rate * len(words) + 0.5))
        assert _is_subsequence(out, words)


@pytest.mark.parametrize("rate", [0.1, 0.2])
def test_swap_keeps_the_words_and_moves_at_most_two_per_swap(rate):
    words = TEXT.split()
    k = int(np.floor(rate * len(words) + 0.5))
    moved = []
    for s in range(50):
        out = noise.perturb(TEXT, rate, "swap", np.random.default_rng(s)).split()
        assert Counter(out) == Counter(words)
        moved.append(sum(a != b for a, b in zip(out, words)))
    assert max(moved) <= 2 * k and np.mean(moved) > 0


def test_rate_zero_and_one_word_texts_are_unchanged():
    rng = np.random.default_rng(0)
    assert noise.perturb(TEXT, 0.0, "swap", rng) == TEXT
    assert noise.perturb("word", 0.5, "swap", rng) == "word"
    assert noise.perturb("one two", 0.5, "deletion", rng) in ("one", "two")


def test_cells_are_seeded_and_independent_of_each_other():
    a = noise.noisy_copies([TEXT, "a b c d e f g h i j"], 0.2, "swap", copies=3, repeat=1, seed=7)
    b = noise.noisy_copies([TEXT, "a b c d e f g h i j"], 0.2, "swap", copies=3, repeat=1, seed=7)
    c = noise.noisy_copies([TEXT, "a b c d e f g h i j"], 0.2, "swap", copies=3, repeat=2, seed=7)
    assert a == b and a != c and len(a) == 6


def test_noise_table_equals_a_direct_loop_and_summarises_like_pandas():
    texts = [TEXT, "a terrible awful day", "nice good happy sunny morning here", "plain words only here"]
    neg = {"terrible", "awful"}

    def negative(batch):
        return np.array([bool(neg & set(t.split())) for t in batch])

    calls = []
    table = noise.noise_table(texts, lambda b: calls.append(len(b)) or negative(b), rates=(0.25, 0.5),
                              copies=4, repeats=3, seed=1)
    assert len(calls) == 1 and len(table) == 1 + 2 * 2 * 3
    clean = table[table.kind == "clean"].iloc[0]
    assert clean.negative_share == pytest.approx(0.25) and clean.n == 4
    for _, row in table[table.kind != "clean"].iterrows():
        batch = noise.noisy_copies(texts, row.rate, row.kind, copies=4, repeat=row["repeat"], seed=1)
        assert row.negative_share == pytest.approx(negative(batch).mean()) and row.n == 16
    summary = noise.summarise(table)
    part = table[(table.kind == "deletion") & (table.rate == 0.5)]["negative_share"]
    row = summary[(summary.kind == "deletion") & (summary.rate == 0.5)].iloc[0]
    assert row.negative_percent == pytest.approx(100 * part.mean())
    assert row.negative_percent_sd == pytest.approx(100 * part.std(ddof=1)) and row.repeats == 3


@pytest.mark.parametrize("call, message", [
    (lambda: noise.perturb(TEXT, 0.1, "insert", np.random.default_rng()), "kind must be"),
    (lambda: noise.perturb(TEXT, 1.5, "swap", np.random.default_rng()), "rate must be"),
    (lambda: noise.noise_table([TEXT, "  "], lambda b: np.zeros(len(b), bool)), "none of them empty"),
    (lambda: noise.noise_table([TEXT], lambda b: np.zeros(len(b), bool), copies=0), "copies"),
    (lambda: noise.noise_table([TEXT], lambda b: np.zeros(2, bool), repeats=1), "returned"),
])
def test_bad_input_is_one_line(call, message):
    with pytest.raises(InputError, match=message):
        call()
