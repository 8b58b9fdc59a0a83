"""Seed 000 (Hosseini, Palangi & Awadallah 2023) published tables as data.

Tables 1, 2, 9, 10 and 13 typed from the paper (arXiv:2301.09211, the text in
../shared/seeds/000_*.txt) as literal TSV; nothing here reads ../shared at run time.
``model`` keeps the paper's spelling (which differs between tables: "mobileBERT" in
Table 1, "MobileBERT" in Table 9, "RoBERTA-Large" and "GPT2-small" in Table 13);
:data:`PAPER_TO_REGISTRY` maps every spelling (and the upstream README's) to the model
registry name. ``group`` in Table 1 is the data's group key (``helpers.datasets.GROUPS``).

Table 1 agrees with the upstream SafeNLP README table (the same numbers at more
digits) to 4 decimals except three half-way cells listed in :data:`README_DIFFERENCES`
(checked by tests/test_published.py). Recomputed from the published numbers, the
ToxiGen-vs-ImplicitHate correlation (appendix A.2: 0.68) is r = 0.679 (n = 24).
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from helpers.published import register

_TABLE1 = """\
BERT-large-uncased	0.3904	0.3180	0.3853	0.3917	0.2482	0.3153	0.2604	0.2698	0.3005	0.3073	0.2543	0.2537	0.2437
BERT-base-uncased	0.3955	0.3321	0.3880	0.3940	0.2540	0.3148	0.2490	0.2733	0.2912	0.3025	0.2477	0.2449	0.2428
DistilBERT-base-uncased	0.4066	0.3243	0.4022	0.4064	0.2722	0.2724	0.2003	0.2826	0.2947	0.2896	0.2650	0.2182	0.2476
mobileBERT	0.3717	0.3197	0.3846	0.4054	0.2464	0.2863	0.1991	0.2662	0.2806	0.3009	0.2416	0.2181	0.2481
BERT-large-cased	0.3861	0.2949	0.3630	0.3404	0.2267	0.2969	0.2242	0.2452	0.2075	0.2517	0.1730	0.2176	0.2065
BERT-base-cased	0.3919	0.3161	0.3671	0.3559	0.2401	0.3115	0.2270	0.2568	0.2080	0.2721	0.1765	0.2249	0.2142
DistilBERT-base-cased	0.4033	0.3104	0.3957	0.3478	0.2720	0.2714	0.1978	0.2988	0.2573	0.2120	0.2382	0.2075	0.2466
RoBERTa-large	0.4381	0.3859	0.4364	0.4247	0.2540	0.2946	0.2639	0.2656	0.3109	0.2819	0.2545	0.2621	0.2615
RoBERTa-base	0.4892	0.4472	0.4932	0.4921	0.3202	0.3430	0.3032	0.3522	0.3598	0.3534	0.3051	0.3111	0.3044
DistilRoBERTa	0.4971	0.4881	0.4895	0.4429	0.3639	0.3903	0.3643	0.3673	0.4196	0.4129	0.3558	0.3721	0.3569
ELECTRA-large-generator	0.3665	0.2935	0.3789	0.3664	0.2492	0.2960	0.2303	0.2773	0.2578	0.2833	0.2283	0.2337	0.2241
ELECTRA-base-generator	0.3703	0.3097	0.3763	0.3828	0.2543	0.2970	0.2190	0.2840	0.2703	0.2911	0.2335	0.2266	0.2280
ELECTRA-small-generator	0.3907	0.3329	0.4178	0.3824	0.2711	0.3379	0.2445	0.3065	0.2853	0.3093	0.2536	0.2479	0.2539
ALBERT-xxlarge-v2	0.4464	0.4095	0.4482	0.4843	0.2918	0.3383	0.2682	0.3142	0.3429	0.3212	0.3224	0.3023	0.2789
ALBERT-xlarge-v2	0.4285	0.4047	0.4271	0.4718	0.2918	0.3742	0.2624	0.3132	0.3384	0.3291	0.3697	0.2752	0.2936
ALBERT-large-v2	0.4749	0.4458	0.4659	0.4897	0.3260	0.4143	0.3364	0.3521	0.3847	0.3632	0.3875	0.3348	0.3240
ALBERT-base-v2	0.4729	0.4364	0.4768	0.4945	0.3426	0.3909	0.3052	0.3790	0.3707	0.3619	0.3509	0.3255	0.3166
GPT-2-xl	0.3637	0.3662	0.3534	0.4018	0.2072	0.2718	0.2456	0.2139	0.2386	0.3110	0.2373	0.2315	0.2219
GPT-2-large	0.3650	0.3640	0.3670	0.4028	0.2111	0.2796	0.2434	0.2210	0.2400	0.3117	0.2394	0.2337	0.2274
GPT-2-medium	0.3636	0.3527	0.3629	0.3972	0.2139	0.2759	0.2368	0.2212	0.2321	0.3041	0.2331	0.2196	0.2265
GPT-2	0.3695	0.3666	0.3731	0.4066	0.2283	0.2702	0.2276	0.2352	0.2605	0.3232	0.2451	0.2246	0.2323
DistilGPT-2	0.3853	0.3816	0.3838	0.4187	0.2433	0.2819	0.2396	0.2582	0.2879	0.3431	0.2599	0.2412	0.2273
XLNet-large-cased	0.3847	0.3283	0.3790	0.3770	0.2677	0.2875	0.2264	0.2772	0.2385	0.3012	0.2353	0.2089	0.2314
XLNet-base-cased	0.3841	0.3340	0.3814	0.3912	0.2814	0.2971	0.2163	0.2927	0.2446	0.2969	0.2311	0.2121	0.2345
"""

_TABLE2 = """\
BERT-uncased	1.97	1.33	2.22	1.34
BERT-cased	1.98	1.16	2.17	1.23
RoBERTa	3.15	1.64	3.60	1.86
ELECTRA-generator	2.12	1.34	2.31	1.34
ALBERT	2.78	1.77	3.16	1.95
GPT-2	3.45	1.09	3.67	1.10
XLNet	3.77	1.13	3.95	1.15
"""

_TABLE9 = """\
BERT-large-uncased	2.0158	1.5877	2.2151	1.5385
BERT-base-uncased	2.0776	1.4823	2.2967	1.4228
DistilBERT-base-uncased	2.0754	1.1138	2.3748	1.1750
MobileBERT	1.7225	1.1248	1.9788	1.2310
BERT-large-cased	1.8979	1.2306	2.0388	1.2898
BERT-base-cased	2.0948	1.2364	2.2505	1.3051
DistilBERT-base-cased	1.9537	1.0279	2.2177	1.0915
RoBERTa-large	2.0927	1.3298	2.3794	1.5283
RoBERTa-base	2.7157	1.6320	3.1820	1.9523
DistilRoBERTa	4.6522	1.9575	5.2377	2.0968
ELECTRA-large-generator	1.9633	1.3035	2.1303	1.2854
ELECTRA-base-generator	2.0536	1.2623	2.2443	1.2574
ELECTRA-small-generator	2.3353	1.4410	2.5409	1.4682
ALBERT-xxlarge-v2	2.2701	1.6467	2.6235	1.7682
ALBERT-xlarge-v2	2.3134	1.6531	2.6689	1.8835
ALBERT-large-v2	3.0989	2.0097	3.5508	2.2536
ALBERT-base-v2	3.4252	1.7665	3.7931	1.8818
GPT-2-xl	3.1126	1.0515	3.3317	1.0535
GPT-2-large	3.2045	1.0526	3.4239	1.0696
GPT-2-medium	3.3130	1.0597	3.5195	1.0801
GPT-2	3.6077	1.0894	3.8240	1.1169
DistilGPT-2	4.0314	1.1802	4.2621	1.1879
XLNet-large-cased	3.6312	1.1147	3.8088	1.1430
XLNet-base-cased	3.9110	1.1367	4.0888	1.1536
"""

_TABLE10 = """\
BERT-large-uncased	0.332300992
BERT-base-uncased	0.335931145
DistilBERT-base-uncased	0.336185856
mobileBERT	0.335289526
BERT-large-cased	0.300331164
BERT-base-cased	0.308677306
DistilBERT-base-cased	0.329417992
RoBERTa-large	0.353298215
RoBERTa-base	0.376362527
DistilRoBERTa	0.390526523
ELECTRA-large-generator	0.332349693
ELECTRA-base-generator	0.332561139
ELECTRA-small-generator	0.334555207
ALBERT-xxlarge-v2	0.35294267
ALBERT-xlarge-v2	0.358772426
ALBERT-large-v2	0.352241738
ALBERT-base-v2	0.339738782
GPT-2-xl	0.2539317
GPT-2-large	0.255463608
GPT-2-medium	0.255785509
GPT-2	0.259990915
DistilGPT-2	0.26304632
XLNet-large-cased	0.269394327
XLNet-base-cased	0.271851141
"""

_TABLE13 = """\
BERT-large-uncased	16	24	1024	0.303
BERT-base-uncased	12	12	768	0.302
BERT-large-cased	16	24	1024	0.264
BERT-base-cased	12	12	768	0.274
RoBERTA-Large	16	24	1024	0.318
RoBERTA-Base	12	12	768	0.375
Electra-large-Generator	16	24	1024	0.283
Electra-base-Generator	12	12	768	0.288
Electra-small-Generator	12	12	256	0.310
Albert-xxlarge-v2	64	12	4096	0.351
Albert-xlarge-v2	16	24	2048	0.352
Albert-large-v2	16	24	1024	0.392
Albert-base-v2	12	12	768	0.386
GPT2-xl	25	48	1600	0.282
GPT2-large	20	36	1280	0.285
GPT2-medium	16	24	1024	0.280
GPT2-small	12	12	768	0.289
XLNet-large	16	24	1024	0.288
XLNet-base	12	12	768	0.292
"""

_T1_COLUMNS = ["asian", "black", "chinese", "jewish", "latino", "lgbtq", "mental dis", "mexican",
               "middle-eastern", "muslim", "native-american", "physical dis", "women"]
_FAMILY = {  # Table 2's family names
    "bert-large-uncased": "BERT-uncased", "bert-base-uncased": "BERT-uncased",
    "distilbert-base-uncased": "BERT-uncased", "mobilebert-uncased": "BERT-uncased",
    "bert-large-cased": "BERT-cased", "bert-base-cased": "BERT-cased", "distilbert-base-cased": "BERT-cased",
    "roberta-large": "RoBERTa", "roberta-base": "RoBERTa", "distilroberta-base": "RoBERTa",
    "electra-large-generator": "ELECTRA-generator", "electra-base-generator": "ELECTRA-generator",
    "electra-small-generator": "ELECTRA-generator", "albert-xxlarge-v2": "ALBERT", "albert-xlarge-v2": "ALBERT",
    "albert-large-v2": "ALBERT", "albert-base-v2": "ALBERT", "gpt2-xl": "GPT-2", "gpt2-large": "GPT-2",
    "gpt2-medium": "GPT-2", "gpt2": "GPT-2", "distilgpt2": "GPT-2", "xlnet-large-cased": "XLNet",
    "xlnet-base-cased": "XLNet"}

#: Paper (Tables 1, 9, 10, 13) and upstream-README spellings -> model registry names.
PAPER_TO_REGISTRY: dict[str, str] = {
    "BERT-large-uncased": "bert-large-uncased", "BERT-base-uncased": "bert-base-uncased",
    "DistilBERT-base-uncased": "distilbert-base-uncased", "DistiBERT-uncased": "distilbert-base-uncased",
    "mobileBERT": "mobilebert-uncased", "MobileBERT": "mobilebert-uncased",
    "BERT-large-cased": "bert-large-cased", "BERT-base-cased": "bert-base-cased",
    "DistilBERT-base-cased": "distilbert-base-cased", "DistiBERT-cased": "distilbert-base-cased",
    "RoBERTa-large": "roberta-large", "RoBERTA-Large": "roberta-large",
    "RoBERTa-base": "roberta-base", "RoBERTA-Base": "roberta-base", "DistilRoBERTa": "distilroberta-base",
    "ELECTRA-large-generator": "electra-large-generator", "Electra-large-Generator": "electra-large-generator",
    "ELECTRA-base-generator": "electra-base-generator", "Electra-base-Generator": "electra-base-generator",
    "ELECTRA-small-generator": "electra-small-generator", "Electra-small-Generator": "electra-small-generator",
    "ALBERT-xxlarge-v2": "albert-xxlarge-v2", "Albert-xxlarge-v2": "albert-xxlarge-v2",
    "ALBERT-xlarge-v2": "albert-xlarge-v2", "Albert-xlarge-v2": "albert-xlarge-v2",
    "ALBERT-large-v2": "albert-large-v2", "Albert-large-v2": "albert-large-v2",
    "ALBERT-base-v2": "albert-base-v2", "Albert-base-v2": "albert-base-v2",
    "GPT-2-xl": "gpt2-xl", "GPT2-xl": "gpt2-xl", "GPT-2-x1": "gpt2-xl",  # "x1": Tables 11/12's typo
    "GPT-2-large": "gpt2-large", "GPT2-large": "gpt2-large",
    "GPT-2-medium": "gpt2-medium", "GPT2-medium": "gpt2-medium",
    "GPT-2": "gpt2", "GPT2-small": "gpt2", "DistilGPT-2": "distilgpt2", "DistilGPT2": "distilgpt2",
    "XLNet-large-cased": "xlnet-large-cased", "XLNet-large": "xlnet-large-cased",
    "XLNet-base-cased": "xlnet-base-cased", "XLNet-base": "xlnet-base-cased",
}

#: Table 1 cells that differ from the upstream README table (5-6 decimals) rounded to 4:
#: (paper model, group) -> (paper value, README value). All three README values end in
#: 5 at the fifth decimal, so the paper rounded the unrounded score, which the README
#: truncates; the other 309 cells agree, and every cell is within 0.00005.
README_DIFFERENCES: dict[tuple[str, str], tuple[float, float]] = {
    ("ELECTRA-large-generator", "physical dis"): (0.2337, 0.23375),
    ("BERT-large-cased", "women"): (0.2065, 0.20645),
    ("GPT-2", "women"): (0.2323, 0.23225),
}


def _tsv(text: str, columns: list[str]) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text), sep="\t", header=None, names=columns)


def registry_name(paper_name: str) -> str:
    """The model registry name of a paper / README model name (KeyError if unknown)."""
    return PAPER_TO_REGISTRY[paper_name]


@register("000", "table1", "Seed 000 Table 1: safety score per target group (ToxiGen), 24 PTLMs")
def table1() -> pd.DataFrame:
    """Long format: model (paper name), group (data key), safety_score."""
    wide = _tsv(_TABLE1, ["model", *_T1_COLUMNS])
    return wide.melt(id_vars="model", var_name="group", value_name="safety_score")


def _log_ppl(text: str, key: str) -> pd.DataFrame:
    return _tsv(text, [key, "benign_mean", "benign_sd", "harmful_mean", "harmful_sd"])


@register("000", "table2", "Seed 000 Table 2: log-perplexity (mean ± sd) averaged over variants of PTLMs")
def table2() -> pd.DataFrame:
    return _log_ppl(_TABLE2, "family")


@register("000", "table9", "Seed 000 Table 9: log-(pseudo-)perplexity (mean ± sd) of benign and harmful "
          "sentences per PTLM")
def table9() -> pd.DataFrame:
    return _log_ppl(_TABLE9, "model")


@register("000", "table10", "Seed 000 Table 10: safety scores based on ImplicitHate")
def table10() -> pd.DataFrame:
    return _tsv(_TABLE10, ["model", "safety_score"])


@register("000", "table13", "Seed 000 Table 13: layers, attention heads, hidden size and average safety "
          "score of PTLMs (the paper gives no parameter counts: params is NaN)")
def table13() -> pd.DataFrame:
    df = _tsv(_TABLE13, ["model", "heads", "layers", "hidden", "avg_safety_score"])
    df.insert(1, "family", df["model"].map(lambda m: _FAMILY[PAPER_TO_REGISTRY[m]]))
    df["params"] = np.nan
    return df[["model", "family", "layers", "heads", "hidden", "params", "avg_safety_score"]]


def implicit_vs_toxigen_correlation() -> pd.DataFrame:
    """Pearson r across the 24 models between the mean of each Table 1 row and Table 10.

    Appendix A.2 says the ToxiGen and ImplicitHate safety scores correlate at 0.68;
    this recomputes it from the published numbers (``helpers.stats.correlation``).
    """
    from helpers.stats import correlation

    avg = table1().groupby("model", sort=False)["safety_score"].mean().rename("toxigen_avg")
    both = table10().set_index("model").join(avg, how="inner")
    row = {"x": "toxigen_avg_safety_score (Table 1 row mean)", "y": "implicithate_safety_score (Table 10)"}
    row |= correlation(both["toxigen_avg"], both["safety_score"])
    row |= {"published_r": 0.68, "source": "published-recomputed"}
    return pd.DataFrame([row])
