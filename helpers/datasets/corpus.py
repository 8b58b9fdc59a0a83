"""Plain-text corpora for training and held-out evaluation of language models.

The book's zoo heals (or, with ``recipe="scratch"``, pre-trains) students on a corpus and every
chapter measures each model's held-out perplexity (:mod:`helpers.metrics.quality`, the
language-model quality gate) on the corpus's fixed held-out split. Offline the corpus is the text
shipped in gensim's test data; with the hub WikiText-103 or OpenWebText (seed 000 §4.7).

    >>> from helpers.datasets import corpus
    >>> train, heldout = corpus.load_corpus("gensim")

Packing the lines into blocks of a model's tokens is the model's business:
:func:`helpers.lm.conventions.pack_blocks`.
"""

from __future__ import annotations

import re
from pathlib import Path


from helpers.errors import DataNotFoundError, InputError, first_line

_GENSIM_FILES = {"lee": "lee_background.cor",
                 "enwiki": "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"}
CORPORA = {
    "gensim": "lee_background.cor (news, ~60k words) + the enwiki sample (Wikipedia, ~400k words) "
              "shipped in gensim's test data",
    "gensim-lee": "lee_background.cor only (news, ~60k words)",
    "gensim-enwiki": "gensim's enwiki sample only (Wikipedia, markup removed, ~400k words)",
    "wikitext-103": "WikiText-103 raw, train / validation (Hugging Face hub, `datasets` library)",
    "openwebtext": "OpenWebText (Hugging Face hub, `datasets` library); held-out = last 5 % of documents",
    "mlma-en": "MLMA hate-speech tweets, English (~5.6k tweets; chapter 07's per-language quality gate)",
    "mlma-fr": "MLMA hate-speech tweets, French (~4k tweets)",
    "mlma-ar": "MLMA hate-speech tweets, Arabic (~3.4k tweets)",
}


def _gensim_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("gensim")
    if spec is None:
        raise DataNotFoundError("corpus 'gensim' needs the gensim package (pip install 'gensim>=4.3')")
    return Path(spec.origin).parent / "test" / "test_data"


def _gensim_lines(which: str) -> list[str]:
    f = _gensim_dir() / _GENSIM_FILES[which]
    if not f.is_file():
        raise DataNotFoundError(f"corpus file {f} missing from the installed gensim")
    if which == "lee":
        return [ln.strip() for ln in f.read_text(encoding="utf-8").splitlines() if ln.strip()]
    import bz2

    from gensim.corpora.wikicorpus import extract_pages, filter_wiki

    lines = []
    with bz2.open(f) as fh:
        for _title, text, _pid in extract_pages(fh):
            for para in filter_wiki(text).split("\n"):
                para = re.sub(r"'{2,}", "", para).strip()
                if len(para.split()) >= 20 and not para.startswith(("|", "{", "!", "*", "=")):
                    lines.append(para)
    return lines


_PLACEHOLDER = re.compile(r"@user\w*|@url\w*|\burl\b|\brt\b", re.IGNORECASE)


def _tweet_lines(tweets) -> list[str]:
    """Tweets as running text: the ``@user`` / ``url`` placeholders and ``#`` marks removed, and
    tweets of fewer than five words dropped (placeholders are trivially predictable by a unigram
    model, which would make every language model look worse than it is)."""
    out = []
    for t in tweets:
        words = [w.lstrip("#") for w in _PLACEHOLDER.sub(" ", str(t)).split()]
        if len(words) >= 5:
            out.append(" ".join(words))
    return out


def _split(lines: list[str], fraction: float) -> tuple[list[str], list[str]]:
    lines = list(dict.fromkeys(lines))      # exact duplicate lines removed: none straddles the split
    k = max(1, int(round(len(lines) * fraction)))
    return lines[:-k], lines[-k:]


def load_corpus(name: str = "gensim", *, heldout_fraction: float = 0.05) -> tuple[list[str], list[str]]:
    """(train_lines, heldout_lines): the last ``heldout_fraction`` of each source's (deduplicated)
    lines is held out (a fixed split). Never the evaluation sets (ToxiGen etc.)."""
    if name in ("gensim", "gensim-lee", "gensim-enwiki"):
        parts = {"gensim": ["lee", "enwiki"], "gensim-lee": ["lee"], "gensim-enwiki": ["enwiki"]}[name]
        train, held = [], []
        for p in parts:
            a, b = _split(_gensim_lines(p), heldout_fraction)
            train += a
            held += b
        return train, held
    if name.startswith("mlma-") and name in CORPORA:     # the only offline text in French and Arabic
        from helpers.datasets.probing import load_mlma

        return _split(_tweet_lines(load_mlma(language=name.removeprefix("mlma-"))["text"]), heldout_fraction)
    if name in ("wikitext-103", "openwebtext"):
        try:
            import datasets  # noqa: F401  (lazy: optional, hub only)
        except ImportError:
            raise DataNotFoundError(f"corpus {name!r} needs the `datasets` library and the Hugging Face "
                                    "hub (pip install datasets); offline use corpus='gensim'") from None
        try:
            if name == "wikitext-103":
                ds = datasets.load_dataset("wikitext", "wikitext-103-raw-v1")
                clean = lambda rows: [t.strip() for t in rows["text"] if len(t.split()) >= 5]  # noqa: E731
                return clean(ds["train"]), clean(ds["validation"])
            ds = datasets.load_dataset("openwebtext", split="train")
            return _split([t.strip() for t in ds["text"]], heldout_fraction)
        except Exception as e:  # hub unreachable, dataset missing
            raise DataNotFoundError(f"corpus {name!r}: cannot load from the hub "
                                    f"({first_line(e, with_type=True)[:160]})") from None
    raise InputError(f"unknown corpus {name!r}; known: {', '.join(CORPORA)}")
