"""Run every benchmark script in this folder (but the long stress_threads.py), each in its
own process, one after another, then print one table of every workload: functorch_core's
time, each installed peer's (NumPy, JAX, torch), and functorch_core's time over the best
peer's, so a regression shows.

    python benchmarks/run_all.py [--quick]

``--quick`` is passed on to the scripts that take it. Each script prints its own report
and, for the table, one ``@@fc-result {json}`` line per workload (``_timing.result``);
every script still runs alone. A peer's column is empty when it is not installed or has
no comparable variant; a ratio below 1 means functorch_core is faster.
"""

import json
import os
import subprocess
import sys

from _timing import PEERS, RESULT_MARK

HERE = os.path.dirname(os.path.abspath(__file__))
SCALE = {"ms": 1e3, "us": 1e6}


def run(path, env, root):
    """Run one script, echoing its output; its result records and its exit status."""
    records = []
    proc = subprocess.Popen([sys.executable, path, *sys.argv[1:]], env=env, cwd=root,
                            stdout=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if line.startswith(RESULT_MARK):
            records.append(json.loads(line[len(RESULT_MARK):]))
        else:
            print(line, end="", flush=True)
    return records, proc.wait()


def table(records):
    """The summary table's lines."""
    width = max([len(r["workload"]) for r in records] + [8])
    head = f"{'workload':<{width}}  {'unit':>4}  {'functorch_core':>14}" + "".join(
        f"  {p:>9}" for p in PEERS) + f"  {'fc / best peer':>14}"
    lines = [head, "-" * len(head)]
    for r in records:
        scale = SCALE[r["unit"]]
        peers = {p: t for p, t in r["peers"].items() if t is not None and t > 0}
        cells = "".join(f"  {r['peers'].get(p) * scale:9.3f}" if p in peers else f"  {'-':>9}"
                        for p in PEERS)
        if peers:
            best = min(peers, key=peers.get)
            ratio = f"{r['functorch_core'] / peers[best]:6.2f}x {best}"
        else:
            ratio = "-"
        lines.append(f"{r['workload']:<{width}}  {r['unit']:>4}  "
                     f"{r['functorch_core'] * scale:14.3f}{cells}  {ratio:>14}")
    return lines


def main():
    scripts = sorted(f for f in os.listdir(HERE)
                     if f.endswith(".py") and not f.startswith("_")
                     and f not in ("run_all.py", "stress_threads.py"))
    env = dict(os.environ)
    root = os.path.dirname(HERE)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    failed, records = [], []
    for name in scripts:
        print(f"\n=== {name} ===", flush=True)
        found, rc = run(os.path.join(HERE, name), env, root)
        records += found
        if rc:
            failed.append(name)
    print("\n=== every workload, medians (fc / best peer: below 1 is faster) ===")
    print("\n".join(table(records)))
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
