"""The footholds' bands (the decisive-claims design), checked on a run's committed pass@k data.

    python scripts/bands.py [--reports reports] [--params params.yaml]

Reads `reports/passk/data/<model>.json` for the models of `passk.bases`' arms (the hop and chain bases) and of
the exposure arm (`--exposure`, default "exposure base"), and prints one row per base, then one line per band:

- every base's verified pass@1 on `edge` in [0.05, 0.9], the mean over an arm's bases in [0.1, 0.8], and each
  base's verified pass@256 on `far` below 0.9 (a graded edge, with room beyond it);
- the exposure bases: on average verified pass@1 on `far` at most 0.1 and verified pass@256 there at least 0.2 (a
  foothold, not mastery), and each keeps the `edge` band.

Data written before verified correctness (the pilot's) has only answer-only pass@k: the script says so and
checks that. Exit status 1 when a band fails (an arm with no bases fails it), 2 when data is missing (a file,
or its `edge` or `far` set, or pass@1 or pass@256 there)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from reasonrl.io import read_json

EDGE_EACH, EDGE_MEAN, FAR_TOP = (0.05, 0.9), (0.1, 0.8), 0.9  # the graded edge, per base and over an arm
FOOT_P1, FOOT_TOP_K = 0.1, 0.2  # the exposure arm's foothold, on average over its bases


NEEDS = (("edge", 1), ("far", 1), ("far", 256))  # the (set, k) cells the bands read


def measure(data: dict, set_name: str, k: int) -> tuple[float, bool]:
    """(pass@k on the set, verified?): the verified value where the file carries one beside the answer-only."""
    s = data["sets"][set_name]
    return s["pass_at_k"][str(k)], "pass_at_k_answer" in s


def lacks(data: dict) -> list[str]:
    """The (set, k) cells the bands read that a data file does not have."""
    sets = data.get("sets", {})
    return [f"{s} pass@{k}" for s, k in NEEDS if str(k) not in sets.get(s, {}).get("pass_at_k", {})]


def base_rows(arms: dict[str, list[str]], data: dict[str, dict]) -> list[dict]:
    rows = []
    for arm, models in arms.items():
        for m in models:
            edge, verified = measure(data[m], "edge", 1)
            rows.append({"arm": arm, "model": m, "edge pass@1": edge, "far pass@1": measure(data[m], "far", 1)[0],
                         "far pass@256": measure(data[m], "far", 256)[0], "verified": verified})
    return rows


def _within(x: float, band: tuple[float, float]) -> bool:
    return band[0] <= x <= band[1]


def checks(arms: list[str], rows: list[dict], exposure: str) -> list[tuple[str, bool]]:
    """(what the band says, with the numbers; whether it holds), one per band and arm."""
    out = []
    for arm in arms:
        mine = [r for r in rows if r["arm"] == arm]
        if not mine:
            out.append((f"{arm}: no bases to check", False))
            continue
        edges = [r["edge pass@1"] for r in mine]
        out.append((f"{arm}: every base's edge pass@1 in [{EDGE_EACH[0]}, {EDGE_EACH[1]}] "
                    f"({', '.join(f'{e:.3f}' for e in edges)})", all(_within(e, EDGE_EACH) for e in edges)))
        far_k = sum(r["far pass@256"] for r in mine) / len(mine)
        if arm == exposure:
            far_1 = sum(r["far pass@1"] for r in mine) / len(mine)
            out.append((f"{arm}: mean far pass@1 {far_1:.3f} <= {FOOT_P1}", far_1 <= FOOT_P1))
            out.append((f"{arm}: mean far pass@256 {far_k:.3f} >= {FOOT_TOP_K}", far_k >= FOOT_TOP_K))
            continue
        mean = sum(edges) / len(edges)
        out.append((f"{arm}: mean edge pass@1 {mean:.3f} in [{EDGE_MEAN[0]}, {EDGE_MEAN[1]}]",
                    _within(mean, EDGE_MEAN)))
        tops = [r["far pass@256"] for r in mine]
        out.append((f"{arm}: every base's far pass@256 below {FAR_TOP} (max {max(tops):.3f})", max(tops) < FAR_TOP))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reports", type=Path, default=Path("reports"))
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--exposure", default="exposure base", help="the exposure bases' arm in passk.arms")
    args = ap.parse_args()
    passk = yaml.safe_load(args.params.read_text())["passk"]
    names = [*passk["bases"], *([args.exposure] if args.exposure in passk["arms"] else [])]
    arms = {a: passk["arms"][a] for a in names}
    paths = {m: args.reports / "passk" / "data" / f"{m}.json" for ms in arms.values() for m in ms}
    if missing := [str(p) for p in paths.values() if not p.exists()]:
        print(f"no pass@k data for {len(missing)} bases: {', '.join(missing)}", file=sys.stderr)
        return 2
    data = {m: read_json(p) for m, p in paths.items()}
    if short := {m: cells for m, d in data.items() if (cells := lacks(d))}:
        print("data files without what the bands read: " + "; ".join(f"{m}: {', '.join(c)}" for m, c in short.items()),
              file=sys.stderr)
        return 2
    rows = base_rows(arms, data)
    verified = {r["verified"] for r in rows}
    print({frozenset({True}): "verified pass@k (the trace checked step by step)",
           frozenset({False}): "answer-only pass@k: these data files predate verified correctness",
           frozenset(): "no bases"}.get(frozenset(verified), "mixed: some files verified, some answer-only (below: "
                                         + ", ".join(r["model"] for r in rows if not r["verified"]) + ")"))
    print("\n| arm | model | edge pass@1 | far pass@1 | far pass@256 |\n|---|---|---|---|---|")
    for r in rows:
        cells = (f"{r[key]:.3f}" for key in ("edge pass@1", "far pass@1", "far pass@256"))
        print(f"| {r['arm']} | {r['model']} | {' | '.join(cells)} |")
    results = checks(list(arms), rows, args.exposure)
    print()
    for text, ok in results:
        print(f"{'holds' if ok else 'FAILS'}  {text}")
    return 0 if all(ok for _, ok in results) else 1


if __name__ == "__main__":
    sys.exit(main())
