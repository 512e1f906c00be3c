"""Run every benchmark script in this folder, each in its own process, one after another.

    python benchmarks/run_all.py [--quick]

``--quick`` is passed on to the scripts that take it. JAX and torch rows appear when
those packages are importable; every script prints its own ratios.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    scripts = sorted(f for f in os.listdir(HERE)
                     if f.endswith(".py") and not f.startswith("_") and f != "run_all.py")
    env = dict(os.environ)
    root = os.path.dirname(HERE)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    failed = []
    for name in scripts:
        print(f"\n=== {name} ===", flush=True)
        rc = subprocess.call([sys.executable, os.path.join(HERE, name), *sys.argv[1:]],
                             env=env, cwd=root)
        if rc:
            failed.append(name)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
