"""The GPU backend: the CPU backend's fusion groups rendered to numba-cuda kernels.

``CudaBackend.compile(graph)`` returns ``run(list of arrays) -> list of arrays``. Planning
is ``backends.planning`` (partition, buffer plan: shared); ``emit.py`` renders kernels,
``runtime.py`` runs the steps. Equations the kernels do not cover run through the
interpreter on host arrays; ``runtime.host_only`` says which and why.
"""

from __future__ import annotations

import sys

from .availability import require


class CudaBackend:
    name = "cuda"

    @staticmethod
    def check():
        require()

    @staticmethod
    def compile(graph):
        require()
        from .runtime import compile_graph
        return compile_graph(graph)

    @staticmethod
    def clear_cache():
        for name in ("emit", "eager"):
            module = sys.modules.get(f"{__name__}.{name}")
            if module is not None:
                module.clear()
