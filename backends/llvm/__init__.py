"""The native CPU backend: partition -> LLVM IR (llvmlite) -> MCJIT -> run.

``CpuBackend.compile(graph)`` returns ``run(list of arrays) -> list of arrays``.
Planning (partition, views, buffer plan) is ``backends.planning``, shared with the
GPU backend; this package renders and runs the steps. Primitives that do not lower
natively run through the interpreter for their own equation only;
``lowering.FALLBACK`` lists them with the reason.
"""

from __future__ import annotations

import sys


class CpuBackend:
    name = "cpu"

    @staticmethod
    def compile(graph):
        from .runtime import compile_graph
        return compile_graph(graph)

    @staticmethod
    def clear_cache():
        runtime = sys.modules.get(__name__ + ".runtime")
        if runtime is not None:     # nothing compiled yet: do not load LLVM to clear nothing
            runtime.clear_cache()
