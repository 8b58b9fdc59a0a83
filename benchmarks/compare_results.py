"""Compare two results/ trees of book builds, table by table (issues 10, 37, 38).

    .venv/bin/python benchmarks/compare_results.py BEFORE/results AFTER/results

Every CSV found in both (book_timings.csv left out) is read; columns are matched by name (their
order ignored), numbers compared to rtol 1e-9 (NaN equal to NaN), texts exactly. Prints the files
found on one side only, each table that differs with what differs, and the count of identical ones.
"""

import sys
from pathlib import Path

import numpy as np
import pandas as pd


def differences(x: pd.DataFrame, y: pd.DataFrame) -> list[str]:
    """What differs between two tables: columns, row counts, or values column by column."""
    out = []
    if set(x.columns) != set(y.columns):
        out.append(f"columns: -{sorted(set(x.columns) - set(y.columns))} +{sorted(set(y.columns) - set(x.columns))}")
    if len(x) != len(y):
        return out + [f"rows {len(x)} -> {len(y)}"]
    for c in (c for c in x.columns if c in y.columns):
        u, v = x[c], y[c]
        if pd.api.types.is_numeric_dtype(u) and pd.api.types.is_numeric_dtype(v):
            bad = ~np.isclose(u.to_numpy(float), v.to_numpy(float), rtol=1e-9, atol=1e-12, equal_nan=True)
        else:
            bad = ~((u.astype(object) == v.astype(object)) | (u.isna() & v.isna())).to_numpy()
        if bad.any():
            out.append(f"{c}: {int(bad.sum())} values differ, e.g. {u[bad].iloc[0]!r:.60} -> {v[bad].iloc[0]!r:.60}")
    return out


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: compare_results.py BEFORE_RESULTS AFTER_RESULTS")
    a, b = map(Path, sys.argv[1:])
    fa = {p.relative_to(a) for p in a.rglob("*.csv")}
    fb = {p.relative_to(b) for p in b.rglob("*.csv")}
    print("only before:", sorted(map(str, fa - fb)), "\nonly after:", sorted(map(str, fb - fa)))
    same = 0
    for rel in sorted(fa & fb):
        if rel.name == "book_timings.csv":
            continue
        found = differences(pd.read_csv(a / rel), pd.read_csv(b / rel))
        same += not found
        if found:
            print(f"DIFF {rel}:", *found, sep="\n    ")
    print(f"{same} identical, {len(fa & fb) - same - (Path('book_timings.csv') in fa & fb)} differ")


if __name__ == "__main__":
    main()
