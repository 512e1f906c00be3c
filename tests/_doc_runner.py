"""Runs Markdown files' Python blocks for tests/api/test_docs.py, in one fresh process.

Reads ``[{"path": ..., "blocks": [{"name": ..., "code": ...}, ...]}, ...]`` as JSON on stdin.
Each file's blocks run in order in one namespace of their own (as a reader pasting them into a
new interpreter would), in an empty working directory of their own under ``argv[2]``, with the
global random generator back at its initial state. The first block of a file that raises ends
that file. Writes, per file, ``{"seconds": ..., "results": [{"stdout", "error"}, ...]}`` as JSON
to the path in ``argv[1]``. One process for every file: importing functorch_core and starting
LLVM once keeps the docs test short.
"""

import contextlib
import io
import json
import linecache
import os
import sys
import time
import traceback


def fresh_state():
    """Undo what an earlier file left in the library's global state."""
    fc = sys.modules.get("functorch_core")
    if fc is not None:
        fc.manual_seed(0)                       # the generator's state in a new process
        fc.use_deterministic_algorithms(False)


def run_file(blocks, workdir):
    os.makedirs(workdir)
    os.chdir(workdir)
    fresh_state()
    namespace = {"__name__": "__main__"}
    results = []
    for block in blocks:
        # registered in linecache so tracebacks, inspect and the tracer's source lines work
        lines = block["code"].splitlines(keepends=True)
        linecache.cache[block["name"]] = (len(block["code"]), None, lines, block["name"])
        out = io.StringIO()
        error = None
        try:
            code = compile(block["code"], block["name"], "exec")
            with contextlib.redirect_stdout(out):
                exec(code, namespace)
        except BaseException:  # a snippet's SystemExit is a failure too
            error = traceback.format_exc()
        results.append({"stdout": out.getvalue(), "error": error})
        if error:
            break
    return results


def main():
    files = json.load(sys.stdin)
    report = {}
    for k, f in enumerate(files):
        started = time.perf_counter()
        results = run_file(f["blocks"], os.path.join(sys.argv[2], str(k)))
        report[f["path"]] = {"seconds": time.perf_counter() - started, "results": results}
    with open(sys.argv[1], "w") as out:
        json.dump(report, out)


if __name__ == "__main__":
    main()
