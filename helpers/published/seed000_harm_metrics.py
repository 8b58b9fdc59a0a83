"""Seed 000 (Hosseini et al. 2023) Tables 3, 4, 5, 11 and 12, typed from the paper text, and the
recomputation of Table 5 from the paper's own Table 13 / Table 1.

Tidy forms: Tables 3/4/5 are long correlation tables (x, y, r); Tables 11/12 are long
(model, group, value) with the data's group keys (helpers.datasets.GROUPS plus "men").
Model names are the paper's (Table 11/12 print "GPT-2-x1" for GPT-2-xl; normalised here).
"""

from __future__ import annotations

import io

import pandas as pd

from helpers.published import register

GROUP_COLUMNS = {"Asian": "asian", "Black": "black", "Chinese": "chinese", "Jewish": "jewish",
                 "Latino": "latino", "LGBTQ": "lgbtq", "Mentally disable": "mental dis",
                 "Mexican": "mexican", "Middle Eastern": "middle-eastern", "Muslim": "muslim",
                 "Native American": "native-american", "Physically disabled": "physical dis",
                 "Women": "women", "Men": "men"}
SAFETY = "Safety score"  # the paper's "Ours (ToxiGen)" / "Safety Score (ToxiGen)"


def _pairs(rows: list[tuple[str, str, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["x", "y", "r"])


@register("000", "table3", "Seed 000 Table 3: PCC between representational harms metrics in autoencoder "
                           "models for the Women demographic")
def table3() -> pd.DataFrame:
    return _pairs([("CMA-WG", "CMA-WB", 0.88), ("CMA-WG", "SS", 0.32), ("CMA-WB", "SS", 0.38),
                   ("CMA-WG", SAFETY, -0.55), ("CMA-WB", SAFETY, -0.53), ("SS", SAFETY, -0.91)])


@register("000", "table4", "Seed 000 Table 4: PCC between representational harms related metrics in "
                           "auto-regressive models for the Women demographic")
def table4() -> pd.DataFrame:
    cols = ["RoBERTa-ToxiGen", "HateBERT", "Regard", "CMA-WG", "CMA-WB"]
    lower = {"HateBERT": [0.46], "Regard": [0.07, -0.47], "CMA-WG": [0.30, 0.69, -0.76],
             "CMA-WB": [0.24, 0.55, -0.75, 0.95], SAFETY: [0.14, -0.35, 0.11, 0.20, 0.15]}
    return _pairs([(cols[j], row, r) for row, vals in lower.items() for j, r in enumerate(vals)])


@register("000", "table5", "Seed 000 Table 5: PCC between safety score and network architecture in PTLMs")
def table5() -> pd.DataFrame:
    vals = {"GPT-2": (-0.54, -0.55, -0.54), "ALBERT": (-0.61, 0.09, -0.83),
            "ELECTRA-generator": (-0.63, -0.63, -0.98)}
    return pd.DataFrame([{"family": f, "x": x, "y": "avg_safety_score", "r": r}
                         for f, rs in vals.items() for x, r in zip(("heads", "layers", "hidden"), rs)])


_T11 = """model	Asian	Black	Chinese	Jewish	Latino	LGBTQ	Mentally disable	Mexican	Middle Eastern	Muslim	Native American	Physically disabled	Women	Men
GPT-2-xl	0.649	0.550	0.730	0.618	0.636	0.618	0.387	0.637	0.686	0.585	0.712	0.512	0.710	0.642
GPT-2-large	0.645	0.506	0.686	0.624	0.624	0.567	0.399	0.594	0.675	0.502	0.713	0.503	0.686	0.640
GPT-2-medium	0.672	0.532	0.691	0.612	0.648	0.612	0.363	0.649	0.702	0.527	0.688	0.525	0.683	0.632
GPT-2	0.654	0.495	0.639	0.499	0.629	0.610	0.374	0.569	0.644	0.537	0.702	0.462	0.665	0.604
DistilGPT-2	0.658	0.495	0.716	0.561	0.693	0.651	0.429	0.636	0.701	0.586	0.785	0.540	0.626	0.612
XLNet-large-cased	0.810	0.563	0.835	0.783	0.710	0.611	0.500	0.757	0.791	0.712	0.801	0.591	0.771	0.735
XLNet-base-cased	0.718	0.505	0.719	0.564	0.655	0.605	0.442	0.684	0.773	0.617	0.718	0.507	0.713	0.702
"""

_T12 = """model	Asian	Black	Chinese	Jewish	Latino	LGBTQ	Mentally disable	Mexican	Middle Eastern	Muslim	Native American	Physically disabled	Women	Men
GPT-2-xl	0.2694	0.3893	0.2622	0.2471	0.3397	0.1970	0.3070	0.2839	0.2649	0.2279	0.2814	0.2987	0.3493	0.3353
GPT-2-large	0.2771	0.3679	0.2509	0.2509	0.3058	0.1993	0.2267	0.2825	0.2998	0.2511	0.2531	0.2437	0.3416	0.3728
GPT-2-medium	0.2853	0.3834	0.2775	0.3091	0.3380	0.2168	0.2424	0.2957	0.2549	0.3016	0.2625	0.3003	0.3451	0.3478
GPT-2	0.2881	0.3621	0.2334	0.2407	0.3106	0.1769	0.2371	0.2470	0.2715	0.2170	0.2173	0.2966	0.3087	0.3285
DistilGPT-2	0.2507	0.2994	0.2253	0.2265	0.2938	0.1779	0.2104	0.2443	0.2607	0.2050	0.2328	0.2489	0.2578	0.2991
XLNet-large-cased	0.2309	0.2783	0.2233	0.1997	0.2826	0.2165	0.2191	0.2583	0.1976	0.2018	0.2266	0.2124	0.4290	0.4450
XLNet-base-cased	0.1444	0.1900	0.1190	0.1463	0.1420	0.1418	0.1476	0.1464	0.1269	0.1221	0.1295	0.1609	0.3441	0.3566
"""


def _long(text: str, value: str) -> pd.DataFrame:
    wide = pd.read_csv(io.StringIO(text), sep="\t")
    out = wide.melt(id_vars="model", var_name="group", value_name=value)
    out["group"] = out["group"].map(GROUP_COLUMNS)
    return out


@register("000", "table11", "Seed 000 Table 11: Regard score (share of positive and neutral predictions "
                            "out of 1000 generated statements) per auto-regressive PTLM and group")
def table11() -> pd.DataFrame:
    return _long(_T11, "regard_score")


@register("000", "table12", "Seed 000 Table 12: safety scores with regard labels (1 positive ... 4 negative) "
                            "as toxicity in eq. 1")
def table12() -> pd.DataFrame:
    return _long(_T12, "safety_score")


FAMILIES_T5 = ("GPT-2", "ALBERT", "ELECTRA-generator")


def recompute_table5(*, from_table: str = "table13", families=FAMILIES_T5) -> pd.DataFrame:
    """Pearson r (n, p, 95% CI) of average safety score with heads, layers, hidden per family,
    from the paper's Table 13: ``from_table="table13"`` uses its printed 3-decimal averages,
    ``"table1"`` the mean over the 13 groups of Table 1's 4-decimal scores (which reproduces the
    printed Table 5 for all three families; the 3-decimal averages do not for GPT-2 and ELECTRA).
    Published r beside; source="published-recomputed"."""
    from helpers import published, stats
    from helpers.published.seed000 import PAPER_TO_REGISTRY

    t13 = published.table("000", "table13")
    if from_table == "table1":
        t1 = published.table("000", "table1")
        avg = t1.groupby(t1["model"].map(PAPER_TO_REGISTRY))["safety_score"].mean()
        t13["avg_safety_score"] = t13["model"].map(PAPER_TO_REGISTRY).map(avg)
    elif from_table != "table13":
        raise ValueError(f"recompute_table5: from_table must be 'table13' or 'table1', not {from_table!r}")
    t13 = t13[t13["family"].isin(families)]
    out = stats.correlation_table(t13, ["heads", "layers", "hidden"], "avg_safety_score", by="family")
    pub = table5().rename(columns={"r": "r_published"})
    out = out.merge(pub, on=["family", "x", "y"], how="left")
    out["averages_from"] = from_table
    out["source"] = "published-recomputed"
    return out
