"""Results next to published values, and the sentences the book writes about them.

The chapters' prose about numbers is generated from the numbers by these functions,
so a rebuild with other models or samples never leaves a claim that has become false.
Tables follow the book's convention: tidy, with a ``source`` column. A chapter's parameters
table is :func:`helpers.chapters.common.parameters_table`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from helpers import stats
from helpers.progress import plural as plural_of


class Text(str):
    """Generated prose (Markdown): a ``str`` that Jupyter shows as Markdown, so a chapter
    module returns sentences without importing IPython and a notebook shows them with
    ``display(...)`` next to its tables."""

    def _repr_markdown_(self) -> str:
        return str(self)


def fmt_ci(value: float, low: float, high: float, digits: int = 3) -> str:
    """``0.412 [0.371, 0.455]`` (value with its interval; blanks for NaN)."""
    if value is None or not np.isfinite(value):
        return "–"
    if low is None or high is None or not (np.isfinite(low) and np.isfinite(high)):
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def fmt_mean_sd(mean: float, sd: float, digits: int = 2) -> str:
    return "–" if not np.isfinite(mean) else f"{mean:.{digits}f} ± {sd:.{digits}f}"


def side_by_side(measured: pd.DataFrame, published: pd.DataFrame, on: list[str],
                 value: str = "safety_score", *, interval: tuple[str, str] = ("ci_low", "ci_high")) -> pd.DataFrame:
    """Measured and published ``value`` on the keys ``on`` with ``difference = measured -
    published``; rows present on one side only are kept (the other side is NaN). When
    ``measured`` has the ``interval`` columns (its 95 % interval), the difference gets one too,
    ``difference_ci_low`` / ``difference_ci_high``: the measured interval minus the published value
    (a published number is printed without uncertainty, so the interval is the measurement's)."""
    low, high = interval
    has_ci = {low, high} <= set(measured.columns)
    m = measured[[*on, value, *([low, high] if has_ci else [])]].rename(columns={value: "measured"})
    p = published[[*on, value]].rename(columns={value: "published"})
    out = m.merge(p, on=on, how="outer")
    out["difference"] = out["measured"] - out["published"]
    if has_ci:
        out["difference_ci_low"] = out.pop(low) - out["published"]
        out["difference_ci_high"] = out.pop(high) - out["published"]
    return out


def published_range(published: pd.DataFrame, by: str = "group", value: str = "safety_score") -> pd.DataFrame:
    """Per ``by``: how many published models, their min, median and max of ``value``."""
    return (published.groupby(by, sort=False)[value]
            .agg(n_models="count", published_min="min", published_median="median", published_max="max")
            .reset_index())


def against_range(measured: pd.DataFrame, published: pd.DataFrame, by: str = "group",
                  value: str = "safety_score") -> pd.DataFrame:
    """Each measured row with the published range of its ``by`` value, the difference to
    the published median and whether it lies within [min, max] of the published models."""
    out = measured.merge(published_range(published, by, value), on=by, how="left")
    out["difference_to_median"] = out[value] - out["published_median"]
    out["within_published_range"] = out[value].between(out["published_min"], out["published_max"])
    return out


def and_list(keys, labels: dict | None = None) -> str:
    """"a, b and c" (labels, if given, rename the keys)."""
    keys = [labels.get(k, k) if labels else k for k in keys]
    return ", ".join(keys[:-1]) + (" and " if len(keys) > 1 else "") + (keys[-1] if keys else "")


def count_of(k: int, n: int, noun: str, verb: tuple[str, str] | None = None, *, plural: str | None = None) -> str:
    """``k`` of ``n`` things as a person writes it: "all 11 models", "both models", "the one model",
    "none of the 8 students", "neither model", "3 of the 11 models"; ``verb`` (singular,
    plural) follows in agreement ("the one model passes", "all 11 models pass"); ``plural`` where
    :func:`helpers.progress.plural` cannot form it ("models with a score below 0.5")."""
    k, n = int(k), int(n)
    many = plural or plural_of(noun, 2)
    if n == 0:
        phrase, one = f"no {many}", False
    elif k == n:
        phrase, one = (f"the one {noun}", True) if n == 1 else (f"both {many}" if n == 2 else f"all {n} {many}", False)
    elif k == 0:
        phrase, one = ((f"no {noun}", True) if n == 1 else (f"neither {noun}", True) if n == 2 else
                       (f"none of the {n} {many}", False))
    else:
        phrase, one = f"{k} of the {n} {noun if n == 1 else many}", k == 1
    return phrase + (f" {verb[0] if one else verb[1]}" if verb else "")


def count_range(low: int, high: int, n: int, noun: str, verb: tuple[str, str] | None = None, *,
                plural: str | None = None) -> str:
    """Between ``low`` and ``high`` of ``n`` things (a count that varies, e.g. per model) as a person
    writes it: :func:`count_of` when the two agree, else "0 to 2 of the 11 groups"."""
    low, high = int(low), int(high)
    if low == high:
        return count_of(low, n, noun, verb, plural=plural)
    return f"{low} to {high} of the {int(n)} {plural or plural_of(noun, 2)}" + (f" {verb[1]}" if verb else "")


def sentence_case(text: str) -> str:
    """``text`` with its first letter capitalised and the rest untouched (``str.capitalize`` lowers it)."""
    return text[:1].upper() + text[1:]


def correlation_sentence(res: dict, what: str) -> str:
    """A sentence reporting a correlation with n, r, p and its 95 % interval, whose reading follows
    from the interval alone: "excludes 0" (the sign is supported at that level), "includes 0" (these
    models do not establish the sign), or no interval at all (n = 3: no reading). Never a verdict
    the interval does not carry."""
    n = int(res.get("n", 0))
    if n >= 3 and not np.isfinite(res.get("r", np.nan)):
        return (f"The correlation {what} is undefined over these {n} models: one of the two is the same "
                "for all of them.")
    if n < 3 or not np.isfinite(res.get("r", np.nan)):
        return (f"The correlation {what} cannot be computed: it needs at least 3 models with both "
                f"scores, and there {'is' if n == 1 else 'are'} {n}.")
    name = "Spearman" if res.get("method") == "spearman" else "Pearson"
    text = f"The {name} correlation {what} is r = {res['r']:.2f} (n = {n}, p = {res['p_value']:.2g}"
    low, high = res.get("ci_low", np.nan), res.get("ci_high", np.nan)
    if not (np.isfinite(low) and np.isfinite(high)):
        return text + (f"; no interval with n = {n}): it supports no reading, neither its sign nor its "
                       "size.")
    text += f", 95% CI [{low:.2f}, {high:.2f}])."
    if low > 0 or high < 0:
        sign = "positive" if low > 0 else "negative"
        text += (f" The interval excludes 0: over these {n} models the correlation is {sign} at the 95% "
                 "level")
        weakest = low if low > 0 else high
        text += (f", though it may be as weak as {weakest:.2f}." if abs(weakest) < 0.5 else ".")
    else:
        text += (f" The interval includes 0: these {n} models do not establish even the sign of the "
                 "correlation.")
    return text


def families_sentence(lineages: dict, *, strong: float = 0.8) -> str:
    """How many independent model families a correlation across the models of ``lineages``
    ({model: its lineage}, :func:`helpers.models.lineage`) rests on, and whether they are enough to
    tell a correlation of ``strong`` from none at 80 % power (:func:`helpers.stats.pairs_for_correlation`;
    a family: a model and every model pruned or distilled from it)."""
    n, families = len(lineages), len(set(lineages.values()))
    need = stats.pairs_for_correlation(strong)
    if n < 3:
        return (f"A correlation needs at least 3 models, and {'one' if n == 1 else n} {plural_of('model', n)} "
                f"{'enters' if n == 1 else 'enter'} here: no correlation is computed.")
    rest = (f"n = {n} {plural_of('model', n)} from {families} independent "
            f"{plural_of('family', families)} (a model and those pruned or distilled from it)")
    if families >= need:
        return f"These correlations rest on {rest}: enough to detect a true correlation of {strong:g} with 80 % power."
    return (f"These correlations rest on {rest}. Telling a true correlation of {strong:g} from none with 80 % "
            f"power takes {need} independent families, so none of them can: read each as a description of these "
            "models, and the within-family models as a dose-response (does pruning move both metrics together?).")


def format_number(x, digits: int = 3) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


# --------------------------------------------------------------------------- language-model quality gate
def _perplexity(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def classifier_gate_rule(margin: float, *, where: str = "on its held-out labelled texts at threshold 0.5") -> str:
    """The classifier gate's rule (:mod:`helpers.metrics.classifier_quality`) as a clause, one
    wording for chapters 05-07."""
    return (f"{where}, the 95 % interval of its macro F1 must clear the majority-class predictor's, and those of "
            f"its balanced accuracy and AUC chance (0.5), each by {margin:g}")


#: Why an MLMA English classifier fails the gate offline: the measurement behind it.
MLMA_OFFLINE_BOUND = ("Offline this is expected: no classifier available here separates MLMA's English tweets well "
                      "enough, not even trained on every training tweet (benchmarks/RESULTS.md, \"MLMA English\": "
                      "TF-IDF, frozen MiniLM-L6 and MPNet-base embeddings, a fine-tuned MiniLM-L6); seed 003's own "
                      "BERT-base teacher, by its Table 1, is only just past it.")


def gate_sentence(table: pd.DataFrame, *, min_ratio: float = 2.0) -> str:
    """One sentence on the language-model quality gate of a :func:`helpers.runner.quality_table`
    (or any table with model, heldout_perplexity, unigram_perplexity, ``ratio`` or
    ``perplexity_ratio``, usable, and optionally min_ratio, else ``min_ratio``): which models
    are excluded and why (their perplexity is not ``min_ratio``× better than the unigram
    baseline of their tokenizer), or that every measured model is usable."""
    if "ratio" not in table.columns and "perplexity_ratio" in table.columns:
        table = table.rename(columns={"perplexity_ratio": "ratio"})
    if "min_ratio" not in table.columns:
        table = table.assign(min_ratio=min_ratio)
    measured = table[table["usable"].map(lambda u: isinstance(u, (bool, np.bool_)))]
    if measured.empty:
        return "No model could be measured for the language-model quality gate."
    bad = measured[~measured["usable"].astype(bool)]
    n = len(measured)
    if bad.empty:
        need = and_list(sorted({f"{r:g}×" for r in measured["min_ratio"]}))
        who = sentence_case(count_of(n, n, "measured model", ("passes", "pass")))
        return (f"{who} the language-model quality gate: {'each has a' if n > 1 else 'its'} held-out perplexity "
                f"{'' if n > 1 else 'is '}at least {need} better than the unigram baseline of its tokenizer.")
    why = []
    for r in bad.itertuples():
        ppl, uni = _perplexity(r.heldout_perplexity), _perplexity(r.unigram_perplexity)
        if r.ratio >= 1:
            why.append(f"{r.model} (perplexity {ppl} is only {r.ratio:.2f}× better than the unigram baseline "
                       f"{uni}; needs {r.min_ratio:g}×)")
        else:
            why.append(f"{r.model} (perplexity {ppl} is worse than the unigram baseline {uni}: ratio "
                       f"{r.ratio:.2f}, needs {r.min_ratio:g}×)")
    verb = "is not a usable language model" if len(bad) == 1 else "are not usable language models"
    return (f"{sentence_case(count_of(len(bad), n, 'measured model'))} {verb} and "
            f"{'is' if len(bad) == 1 else 'are'} excluded from correlations and verdicts: {and_list(why)}.")


def gate_count_sentence(table: pd.DataFrame, *, min_ratio: float, kept_out_of: str) -> str:
    """How many of the measured models of ``table`` (model, usable) fail the language-model quality gate,
    named, and that they stay in the tables, flagged, and out of ``kept_out_of`` (a chapter's short form
    of :func:`gate_sentence`, whose table beside it gives the perplexities)."""
    measured = table[table["usable"].map(lambda u: isinstance(u, (bool, np.bool_)))]
    if measured.empty:
        return "No model could be measured for the language-model quality gate."
    bad = measured.loc[~measured["usable"].astype(bool), "model"].tolist()
    if not bad:
        return sentence_case(count_of(len(measured), len(measured), "measured model", ("passes", "pass"))
                             + " the language-model quality gate.")
    one = len(bad) == 1
    return (f"{sentence_case(count_of(len(bad), len(measured), 'measured model', ('fails', 'fail')))} the language-model "
            f"quality gate (held-out perplexity not {min_ratio:g}× better than the unigram baseline of its "
            f"tokenizer): {and_list([f'`{n}`' for n in bad])}. {'It stays' if one else 'They stay'} in the tables, "
            f"flagged, and out of {kept_out_of}.")


# --------------------------------------------------------------------------- tables as shown
#: The dash a cell that does not apply shows (never "nan").
NOT_APPLICABLE = "—"
#: Why a column may have no value in a row, by column name (a table's ``attrs["why"]`` adds or
#: overrides entries: ``{"column": "reason"}``).
WHY_MISSING = {
    "published": "the paper has no value for this row",
    "paper": "the paper has no value for this row",
    "difference": "there is no published value to subtract",
    "ci": "no interval: too few values to resample or a constant sample",
    "r": "not computable: fewer than 3 models with both values, or one of them constant",
    "p": "no test: too few values, or the statistic is undefined",
    "measured": "this row is published, not measured here",
}


def correlation_why(table: pd.DataFrame, *, unit: str = "models", same_for: str = "every model of the family",
                    constant: str | None = None, unmeasured: str = "nothing was measured for this row",
                    columns=None) -> dict:
    """Why a cell of a correlation table (columns n, r and, when computed, p_value, ci_low, ci_high) is
    empty, per column, from the rows it is empty in: no n (``unmeasured``), fewer than 3 ``unit``, a
    column the same for ``same_for`` (r undefined; ``constant`` says it otherwise), only 3 ``unit`` or
    |r| = 1 (no Fisher-z interval: its standard error needs n > 3 and its z is infinite at |r| = 1).
    ``columns``: those explained (default r, p_value, ci_low and ci_high); for a table's
    ``attrs["why"]``."""
    measured, n, r = table["n"].notna(), table["n"].fillna(0), table["r"]
    causes = [(~measured, unmeasured), (measured & (n < 3), f"fewer than 3 {unit}"),
              (measured & (n >= 3) & r.isna(), constant or f"the column is the same for {same_for}"),
              (measured & (n == 3) & r.notna(), f"3 {unit} give no Fisher-z interval"),
              (measured & (n > 3) & (r.abs() >= 1 - 1e-12), "|r| = 1 has no Fisher-z interval")]
    why = {}
    for column in columns or [c for c in ("r", "p_value", "ci_low", "ci_high") if c in table]:
        empty = table[column].isna()
        reasons = [text for mask, text in causes if (mask & empty).any()]
        if reasons:
            why[column] = "; or ".join(reasons)
    return why


def _why(column: str, why: dict) -> str:
    if column in why:
        return why[column]
    c = column.lower()
    if c in ("r", "rho", "spearman", "pearson"):
        return WHY_MISSING["r"]
    for prefix in ("published", "paper", "difference", "ci", "p", "measured"):
        if c == prefix or c.startswith(prefix + "_") or c.endswith("_" + prefix):
            return WHY_MISSING[prefix]
    return "does not apply to this row"


class EmptyTable(Text):
    """The sentence shown in place of a table with nothing to show; in the book it carries the
    table's anchor (:func:`table_anchor`), so a finding about the table still links to it."""

    def __new__(cls, text: str, name: str = ""):
        self = super().__new__(cls, text)
        self.name = name
        return self

    def _repr_html_(self) -> str:
        anchor = f' id="{table_anchor(self.name)}"' if self.name else ""
        return f"<p{anchor}>{_inline_html(str(self))}</p>"


def table_view(df: pd.DataFrame, name: str = "", *, why: dict | None = None, digits: int = 3):
    """A table as the book shows it: a cell without a value shows "—" (never "nan"), and the
    caption says why, column by column (``why`` or ``df.attrs["why"]`` first, then
    :data:`WHY_MISSING` by column name). A table whose every numeric cell is empty is replaced by a
    sentence (:class:`Text`) that says so and why. Returns a pandas ``Styler`` or a ``Text``."""
    why = {**df.attrs.get("why", {}), **(why or {})}
    missing = [c for c in df.columns if df[c].isna().any()]
    numeric = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])]
    title = f"`{name}`" if name else "This table"
    if len(df) == 0:
        return EmptyTable(f"{title} has no rows: " + why.get("", "nothing could be computed for these settings")
                          + ".", name)
    if numeric and all(df[c].isna().all() for c in numeric):
        reasons = sorted({_why(c, why) for c in numeric})
        return EmptyTable(f"{title} has no value to show: " + "; ".join(reasons) + ".", name)
    by_reason: dict[str, list[str]] = {}
    for c in missing:
        by_reason.setdefault(_why(str(c), why), []).append(str(c))
    caption = ("" if not by_reason else f"{NOT_APPLICABLE} : " + "; ".join(
        f"{reason} ({and_list(cols)})" for reason, cols in by_reason.items()) + ".")
    whole = [c for c in numeric if pd.api.types.is_float_dtype(df[c]) and df[c].dropna().mod(1).eq(0).all()
             and df[c].abs().max() < 1e15]       # counts made float by a missing cell: no decimals
    styler = df.style.format(precision=digits, na_rep=NOT_APPLICABLE).set_table_attributes('class="dataframe"')
    if name:
        styler = styler.set_uuid(table_anchor(name).removeprefix("T_"))   # a finding links to #T_<name>
    if whole:
        styler = styler.format("{:.0f}", subset=whole, na_rep=NOT_APPLICABLE)
    if df.index.name is None and not isinstance(df.index, pd.MultiIndex):
        styler = styler.hide(axis="index")
    return styler.set_caption(caption) if caption else styler


# --------------------------------------------------------------------------- a page a reader can follow
#: What every chapter page is held to (issue 46; tests/test_book_reads.py over the ci book's executed
#: notebooks and each chapter's tests read these, nothing else states them): a generated paragraph at
#: most ``max_paragraph_words`` words; one sentence shape (numbers aside) at most ``max_shape_repeats``
#: times a chapter; a Findings box of ``findings`` (fewest, most) bullets.
READING = {"max_paragraph_words": 120, "max_shape_repeats": 2, "findings": (3, 6)}

#: Text that only an exception, a warning or a log line writes: never on a page.
NOISE = ("Traceback (most recent call last)", "Error:", "Warning:", "Exception:", "ConnectionError",
         "(HTTPError", "offline? copy")

#: Counts a program writes and a person does not: a plural left to the reader ("model(s)"), every
#: one written as "11 of the 11" (a range "0 to 2 of the 2" or "n = 2 of the 2" is fine) and none as
#: "0 of the 11".
_MACHINE_COUNTS = [
    (re.compile(r"\b[A-Za-z]+\(s\)"), "a plural left to the reader"),
    (re.compile(r"(?<![\d.,−-])(?<!to )(?<!= )(\d[\d,]*) of (?:[\w'’]+ ){0,2}?\1(?![\d.,]?\d)"),
     "a count of all written as 'k of k'"),
    (re.compile(r"(?<![\d.,−-])(?<!to )(?<!= )0 of (?:[\w'’]+ ){0,2}?\d"), "a count of none written as '0 of n'"),
]

_NUMBER = re.compile(r"[−+-]?\d[\d,]*(?:\.\d+)?(?:e[−+-]?\d+)?")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\[])")


def paragraphs(markdown: str) -> list[str]:
    """The prose paragraphs of ``markdown``: blocks between blank lines, each list item a paragraph
    of its own; headings, tables, code and HTML blocks left out."""
    out, in_code = [], False
    for block in re.split(r"\n\s*\n", markdown):
        lines = block.strip().splitlines()
        if not lines:
            continue
        if lines[0].lstrip().startswith("```") or in_code:
            in_code = (block.count("```") % 2 == 1) != in_code
            continue
        if lines[0].lstrip().startswith(("#", "|", "<", ":::")):
            continue
        items, current = [], []
        for line in lines:
            if re.match(r"\s*(?:[-*+]|\d+\.)\s", line) and current:
                items.append(" ".join(current))
                current = []
            current.append(line.strip())
        items.append(" ".join(current))
        out += [re.sub(r"^(?:[-*+]|\d+\.)\s+", "", item) for item in items]
    return out


def word_count(text: str) -> int:
    """Words a reader reads: a link counts by its text, not its address."""
    return len(_LINK.sub(r"\1", text).split())


def sentences(markdown: str) -> list[str]:
    """The sentences of the prose paragraphs of ``markdown``."""
    return [s.strip() for p in paragraphs(markdown) for s in _SENTENCE_END.split(_LINK.sub(r"\1", p)) if s.strip()]


def sentence_shape(sentence: str) -> str:
    """A sentence with its numbers aside: numbers as ``#``, case and spacing folded. Two sentences
    that differ only in their numbers have one shape."""
    return " ".join(_NUMBER.sub("#", sentence).lower().split())


def reading_problems(markdown: str, *, reading: dict = READING) -> list[str]:
    """What keeps ``markdown`` (a chapter's generated prose, all of it) from reading as a report:
    each paragraph over the word limit, each sentence shape written more than the limit, each piece
    of exception or warning text, each count a program writes (:func:`machine_counts`). Empty when it
    reads well."""
    problems = [f"a paragraph of {word_count(p)} words (at most {reading['max_paragraph_words']}): "
                f"{p[:80]!r}…" for p in paragraphs(markdown) if word_count(p) > reading["max_paragraph_words"]]
    shapes: dict[str, int] = {}
    for s in sentences(markdown):
        if word_count(s) >= 4:                       # "Yes." or a caption fragment is no sentence shape
            shapes[sentence_shape(s)] = shapes.get(sentence_shape(s), 0) + 1
    problems += [f"one sentence shape {n} times (at most {reading['max_shape_repeats']}): {shape[:80]!r}"
                 for shape, n in shapes.items() if n > reading["max_shape_repeats"]]
    problems += [f"exception or warning text on the page: {word!r}" for word in NOISE if word in markdown]
    return problems + machine_counts(markdown)


def machine_counts(markdown: str) -> list[str]:
    """Counts in ``markdown`` that a program writes and a person does not ("model(s)", "11 of the 11",
    "0 of the 11"; :func:`count_of` and :func:`count_range` write them as a person does)."""
    return [f"{what}: {m.group(0)!r} in '…{m.string[max(m.start() - 50, 0):m.end() + 30]}…' (write it with count_of)"
            for rx, what in _MACHINE_COUNTS for p in paragraphs(markdown) for m in rx.finditer(_LINK.sub(r"\1", p))]


def table_anchor(name: str) -> str:
    """The HTML id of result table ``name`` where :func:`table_view` shows it (pandas' Styler
    writes ``T_`` and its uuid): a finding links to it."""
    return "T_" + re.sub(r"[^A-Za-z0-9_-]", "_", name)


def plain(markdown: str) -> str:
    """Markdown as a terminal shows it: links by their text, no emphasis or code marks."""
    return re.sub(r"\*\*|(?<!\w)\*(?!\s)|(?<!\s)\*(?!\w)|`", "", _LINK.sub(r"\1", markdown))


def _inline_html(markdown: str) -> str:
    """The inline Markdown a finding uses (links, ``**bold**``, ``*italic*``, ```code```) as HTML."""
    import html

    text = html.escape(markdown, quote=False)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"<em>\1</em>", text)


@dataclass(frozen=True)
class Finding:
    """One finding of a chapter: a sentence computed from this build's numbers (a value with its
    interval, the model or group it is about), and the result table it comes from, linked
    (``label``: how the link reads, e.g. "Table 1"; default the table's name)."""

    text: str
    table: str
    label: str = ""

    @property
    def markdown(self) -> str:
        return f"{self.text} ([{self.label or self.table}](#{table_anchor(self.table)}))"


#: The name of a chapter's findings table (``results/<chapter>/findings.csv``).
FINDINGS_TABLE = "findings"


class Findings(Text):
    """A chapter's Findings box: its :class:`Finding` bullets, shown as an admonition in the book
    (HTML) and as a Markdown list in Jupyter."""

    TITLE = "Findings"

    def __new__(cls, items):
        items = tuple(items)
        self = super().__new__(cls, f"**{cls.TITLE}**\n\n" + "\n".join(f"- {f.markdown}" for f in items))
        self.items = items
        return self

    def _repr_html_(self) -> str:
        bullets = "".join(f"<li><p>{_inline_html(f.markdown)}</p></li>" for f in self.items)
        return (f'<div class="admonition tip findings"><p class="admonition-title">{self.TITLE}</p>'
                f'<ul class="simple">{bullets}</ul></div>')
