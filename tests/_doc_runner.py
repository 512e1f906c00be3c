"""Runs one Markdown file's Python blocks for tests/test_docs.py, in a fresh process.

Reads ``[{"name": ..., "code": ...}, ...]`` as JSON on stdin, executes the blocks in order in
one namespace (as a reader pasting them one after another would), and writes one record per
block, ``{"stdout": ..., "error": traceback or None}``, as JSON to the path in ``argv[1]``. The
first block that raises ends the run.
"""

import contextlib
import io
import json
import linecache
import sys
import traceback


def main():
    blocks = json.load(sys.stdin)
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
    with open(sys.argv[1], "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
