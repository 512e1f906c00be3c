"""Backend-neutral planning: what every compiling backend does before it renders code.

- ``plan.py``: the plan a graph becomes (numbered buffer *slots* and *steps*: fused
  kernels, products, sorts, fallbacks, ...) and ``c_strides``;
- ``views.py``: layout primitives as affine re-indexings of a view (no copies);
- ``partition.py``: the fusion partition, one forward walk that groups equations into
  those steps, under the backend's *gap* rule (which equations it leaves to the
  interpreter; ``numpy_gap`` holds the reasons every backend shares);
- ``buffers.py``: the buffer plan, intermediates sharing one reused block by liveness.

Backends (``backends/llvm``, ``backends/cuda``) keep only their rendering and runtime.
Nothing here imports llvmlite, numba or CuPy.
"""
