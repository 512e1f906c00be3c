"""Every workload of this folder through two checkouts of functorch_core, in one run:
this tree and a base tree (another commit, with its own environment), their scripts
interleaved round by round so that a change in the machine's load falls on both.

    python benchmarks/compare_trees.py BASE_ROOT BASE_PYTHON [--rounds N] [--quick]
                                       [--only a.py,b.py]

Each script runs in its own process per tree and round, each tree's own copy of the
script (``--quick`` is passed on). Per workload the table gives the median over rounds of
this tree's time over the base's (``head / base``; above 1: slower now) and the same ratio
with each time first divided by NumPy's in the same process (``normalised``: the share of
a load change that hit one process and not the other cancels). Workloads that exist in
one tree only are listed apart.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

from _timing import RESULT_MARK

HERE = os.path.dirname(os.path.abspath(__file__))
SKIPPED = ("run_all.py", "compare_trees.py", "stress_threads.py")


def scripts(root):
    folder = os.path.join(root, "benchmarks")
    return sorted(f for f in os.listdir(folder)
                  if f.endswith(".py") and not f.startswith("_") and f not in SKIPPED)


def measure(python, root, name, quick):
    """``{workload: (fc seconds, numpy seconds or None)}`` of one script run; {} if it failed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    args = [python, os.path.join(root, "benchmarks", name), *(["--quick"] if quick else [])]
    proc = subprocess.run(args, env=env, cwd=root, capture_output=True, text=True)
    if proc.returncode:
        print(f"  {name} failed in {root}: {proc.stderr.strip().splitlines()[-1:]}",
              flush=True)
        return {}
    out = {}
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            r = json.loads(line[len(RESULT_MARK):])
            out[r["workload"]] = (r["functorch_core"], r["peers"].get("NumPy"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base_root")
    ap.add_argument("base_python")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    opts = ap.parse_args()
    trees = {"head": (sys.executable, os.path.dirname(HERE)),
             "base": (opts.base_python, os.path.abspath(opts.base_root))}
    names = [n for n in scripts(trees["head"][1]) if n in set(scripts(trees["base"][1]))]
    if opts.only:
        names = [n for n in names if n in opts.only.split(",")]
    runs = {"head": {}, "base": {}}   # tree -> workload -> [(fc, numpy), ...]
    for rnd in range(opts.rounds):
        for name in names:
            order = ("base", "head") if rnd % 2 == 0 else ("head", "base")
            print(f"round {rnd + 1}/{opts.rounds}: {name}", flush=True)
            for tree in order:
                for w, t in measure(*trees[tree], name, opts.quick).items():
                    runs[tree].setdefault(w, []).append(t)
    both = [w for w in runs["head"] if w in runs["base"]]
    ratios, normed = [], []
    print(f"\n{'workload':<56} {'head / base':>12} {'spread':>15} {'normalised':>11}")
    for w in both:
        pairs = list(zip(runs["head"][w], runs["base"][w], strict=False))
        r = [h[0] / b[0] for h, b in pairs]
        n = [(h[0] / h[1]) / (b[0] / b[1]) for h, b in pairs if h[1] and b[1]]
        ratios.append(statistics.median(r))
        if n:
            normed.append(statistics.median(n))
        norm = f"{statistics.median(n):.2f}" if n else "-"
        print(f"{w[:56]:<56} {ratios[-1]:>12.2f} {min(r):>7.2f}-{max(r):<7.2f} {norm:>11}")
    only = sorted(set(runs["head"]) ^ set(runs["base"]))
    if only:
        print("\nin one tree only: " + ", ".join(only))
    print(f"\n{len(both)} workloads; median head/base {statistics.median(ratios):.3f}, "
          f"slower by more than 5%: {sum(r > 1.05 for r in ratios)}"
          + (f"; normalised median {statistics.median(normed):.3f}, over 5%: "
             f"{sum(r > 1.05 for r in normed)}" if normed else ""))


if __name__ == "__main__":
    main()
