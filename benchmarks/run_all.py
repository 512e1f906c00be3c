"""Run every benchmark script in this folder (but the long stress_threads.py), each in its
own process, one after another, then print one table of every workload: functorch_core's
time, each installed peer's (NumPy, JAX, torch), and functorch_core's time over the best
peer's, so a regression shows.

    python benchmarks/run_all.py [--quick] [--write]

``--quick`` is passed on to the scripts that take it. Each script prints its own report
and, for the table, one ``@@fc-result {json}`` line per workload (``_timing.result``);
every script still runs alone. A peer's column is empty when it is not installed or has
no comparable variant; a ratio below 1 means functorch_core is faster.

Generated tables: ``--write`` is the one convention. A script that measures a table the
docs link to rewrites its file under ``benchmarks/results/`` when run with ``--write``
(``_results.write``: a header line naming the script, the time and the machine, then the
table); here ``--write`` rewrites ``results/speed.md`` with the table below and is passed on
to every script that writes a results file, so one ``run_all.py --quick --write``
regenerates them all. Without ``--write`` nothing is written.
"""

import json
import os
import subprocess
import sys

from _results import timing_notes, wants_write, write
from _timing import PEERS, RESULT_MARK

HERE = os.path.dirname(os.path.abspath(__file__))
SCALE = {"ms": 1e3, "us": 1e6}


def writes_results(path):
    """Whether a script writes a results file (it uses ``_results``)."""
    with open(path) as f:
        return "_results import" in f.read()


def run(path, env, root):
    """Run one script, echoing its output; its result records and its exit status."""
    records = []
    args = [a for a in sys.argv[1:] if a != "--write" or writes_results(path)]
    proc = subprocess.Popen([sys.executable, path, *args], env=env, cwd=root,
                            stdout=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if line.startswith(RESULT_MARK):
            records.append(json.loads(line[len(RESULT_MARK):]))
        else:
            print(line, end="", flush=True)
    return records, proc.wait()


COLUMNS = ("workload", "unit", "functorch_core", *PEERS, "fc / best peer")


def rows(records):
    """One row of cells per record, in ``COLUMNS``' order ("-": no such peer)."""
    out = []
    for r in records:
        scale = SCALE[r["unit"]]
        peers = {p: t for p, t in r["peers"].items() if t is not None and t > 0}
        cells = [f"{peers[p] * scale:.3f}" if p in peers else "-" for p in PEERS]
        if peers:
            best = min(peers, key=peers.get)
            ratio = f"{r['functorch_core'] / peers[best]:.2f}x {best}"
        else:
            ratio = "-"
        out.append([r["workload"], r["unit"], f"{r['functorch_core'] * scale:.3f}", *cells,
                    ratio])
    return out


def table(records):
    """The summary table's lines."""
    body = rows(records)
    width = max([len(r[0]) for r in body] + [8])
    widths = [width, 4, 14] + [9] * len(PEERS) + [14]
    lines = ["  ".join(f"{c:<{w}}" if i == 0 else f"{c:>{w}}"
                       for i, (c, w) in enumerate(zip(row, widths, strict=True)))
             for row in [list(COLUMNS), *body]]
    return lines[:1] + ["-" * len(lines[0])] + lines[1:]


def main():
    scripts = sorted(f for f in os.listdir(HERE)
                     if f.endswith(".py") and not f.startswith("_")
                     and f not in ("run_all.py", "compare_trees.py", "stress_threads.py",
                                   "signatures_rss.py"))
    env = dict(os.environ)
    root = os.path.dirname(HERE)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    failed, records = [], []
    for name in scripts:
        print(f"\n=== {name} ===", flush=True)
        found, rc = run(os.path.join(HERE, name), env, root)
        for r in found:
            r["script"] = name
        records += found
        if rc:
            failed.append(name)
    print("\n=== every workload, medians (fc / best peer: below 1 is faster) ===")
    print("\n".join(table(records)))
    if wants_write():
        notes = [*timing_notes(), "Every workload's median through functorch_core and through "
                 "each installed peer that runs the same computation ('-': not installed or no "
                 "such variant); the last column is functorch_core's time over the best "
                 "peer's (below 1: functorch_core is faster); the script column names the script "
                 "that measures it."]
        if failed:
            notes.append(f"Scripts that failed in this run: {', '.join(failed)}.")
        body = [[*row, f"`{r['script']}`"] for row, r in zip(rows(records), records, strict=True)]
        write("speed", "run_all.py", [(None, [*COLUMNS, "script"], body)], notes=notes)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
