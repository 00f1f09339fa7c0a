#!/usr/bin/env python3
"""Paper vs predicted, side by side, with a verdict: the headline table every experiments/*/run.sh prints.

Reads one headline per line on stdin, tab-separated:
    name <TAB> paper <TAB> predicted <TAB> neutral
`neutral` is the value that means "no effect" (1 for a speedup or a ratio of times, 0 for a
gain in per cent); the paper's side of it is the headline's direction. A line whose predicted
field is "-" is a headline not attempted (printed as such). Verdicts:
    within           the paper's direction and |predicted - paper| <= 0.25 |paper|
    outside          the paper's direction, further away
    wrong direction  predicted on the other side of `neutral` than the paper (or on it)
Prints the table, one summary line and the names of the headlines in the wrong direction; exits 1
when there is any.
    python3 experiments/headlines.py "Janus headlines (predicted)" < rows.tsv
"""
import sys

TOLERANCE = 0.25  # the +-25 % every headline is held to (issue 34)


def verdict(paper, predicted, neutral):
    if (paper - neutral) * (predicted - neutral) <= 0:
        return "wrong direction"
    return "within" if abs(predicted - paper) <= TOLERANCE * abs(paper) else "outside"


def main():
    title = sys.argv[1] if len(sys.argv) > 1 else "headlines"
    rows = []
    for n, line in enumerate(sys.stdin, 1):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 4:
            sys.exit(f"headlines.py: line {n}: want 4 tab-separated fields (name, paper, predicted, neutral), "
                     f"got {len(fields)}: {line!r}")
        name, paper, predicted, neutral = fields
        try:
            p, z = float(paper), float(neutral)
            q = None if predicted.strip() == "-" else float(predicted)
        except ValueError as e:
            sys.exit(f"headlines.py: line {n}: {e}")
        rows.append((name, p, q, z))
    print(f"== {title}: paper vs predicted, within +-{TOLERANCE:.0%} of the paper's value")
    width = max([len(r[0]) for r in rows] + [8])
    print(f"{'headline':{width}s} {'paper':>9s} {'predicted':>10s}  verdict")
    counts = {"within": 0, "outside": 0, "wrong direction": 0, "not attempted": 0}
    for name, p, q, z in rows:
        v = "not attempted" if q is None else verdict(p, q, z)
        counts[v] += 1
        shown = "-" if q is None else f"{q:.3g}"
        print(f"{name:{width}s} {p:9.3g} {shown:>10s}  {v}")
    print("headlines: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    wrong = [name for name, p, q, z in rows if q is not None and verdict(p, q, z) == "wrong direction"]
    if wrong:
        print("wrong direction: " + "; ".join(wrong))
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
