"""The data a partition hands to a backend's code generation and runtime.

A :class:`Plan` numbers every value's buffer as a *slot* (graph inputs first, then
constants, then what the steps produce) and lists the steps in execution order:
:class:`Kernel` (one fused loop nest), :class:`Blas` (a product) and
:class:`Fallback` (one equation through the interpreter), :class:`Sort` (a sort
along one dimension), :class:`Lapack` (a linalg equation with scratch slots),
:class:`Conv` and :class:`Loop` (cond/while/scan). Backend-neutral: the CPU backend
renders these with llvmlite, the GPU backend with numba-cuda.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def c_strides(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


@dataclass(frozen=True)
class View:
    """An affine read of slot ``slot``: element [i...] is at ``offset + sum(i*strides)``."""

    slot: int
    shape: tuple
    dtype: np.dtype
    offset: int
    strides: tuple

    def contiguous(self) -> bool:
        return all(s == c for s, c, d in zip(self.strides, c_strides(self.shape), self.shape,
                                             strict=True) if d != 1)


@dataclass
class Op:
    prim: object          # a Primitive, or "iota"
    args: tuple           # refs: ("read", i) | ("op", j) | ("const", np scalar)
    params: dict
    dtype: np.dtype       # result dtype
    arg_dtype: np.dtype   # dtype the rule dispatches on


@dataclass(eq=False)
class Reduce:
    prim: object
    ref: tuple
    slot: int
    out_dtype: np.dtype
    in_dtype: np.dtype
    axis: int | None = None     # argmax/argmin: the axis whose index is kept
    ordered: bool = False       # a float sum kept in loop order (never reassociated)
    # argmax/argmin that keeps this ref's value (of out_dtype) at the selected point instead
    # of an index: the first max/min of ``ref`` over all reduced axes picks it
    payload: tuple | None = None


@dataclass(eq=False)
class Scatter:
    """Write (or add) ``ref`` into slot ``slot`` (a fresh copy of the operand) at
    ``offset + sum(pos * strides) + sum(clip(index_k, 0, bounds_k) * index_strides_k)``."""

    add: bool
    ref: tuple
    slot: int
    dtype: np.dtype
    index_refs: tuple
    index_dtypes: tuple
    bounds: tuple
    index_strides: tuple
    strides: tuple              # the static part, over the kernel's dimensions


@dataclass(eq=False)
class Kernel:
    shape: tuple
    axes: tuple | None = None           # reduced (or scanned) axes, innermost loops
    reverse: bool | None = None         # scans run backwards along their axis
    reads: list = field(default_factory=list)       # Views with strides over `shape`
    dyn_reads: list = field(default_factory=list)   # Views read at a runtime offset
    ops: list = field(default_factory=list)
    stores: list = field(default_factory=list)      # (ref, slot, dtype), full shape
    reduces: list = field(default_factory=list)     # Reduce, written over the kept dims
    sealed: bool = False
    stored: dict = field(default_factory=dict)      # member ref -> slot
    scatters: list = field(default_factory=list)    # Scatter: in-place writes to a copy

    def read(self, view: View):
        key = (view.slot, view.offset, view.strides)
        for i, r in enumerate(self.reads):
            if (r.slot, r.offset, r.strides) == key:
                return ("read", i)
        self.reads.append(view)
        return ("read", len(self.reads) - 1)


def kernel_label(k: Kernel, most: int = 6) -> str:
    """``kernel[mul+add+tanh]``: a kernel named by its fused primitives (the first
    ``most`` distinct ones), as the profilers show it."""
    names = [getattr(p, "name", p) for p in [op.prim for op in k.ops] +
             [r.prim for r in k.reduces]]
    names += ["scatter_add" if sc.add else "scatter" for sc in k.scatters]
    unique = list(dict.fromkeys(names)) or ["copy"]
    if len(unique) > most:
        unique = unique[:most] + [f"{len(unique) - most} more"]
    return "kernel[" + "+".join(unique) + "]"


@dataclass
class Fallback:
    eqn: object
    inputs: list          # ("slot", slot, shape) | ("lit", value)
    outputs: list         # slots
    reason: str


@dataclass
class Loop:
    """A control-flow equation (cond/while/scan) run by ``loops.py``: bodies compiled once."""

    eqn: object
    inputs: list          # ("slot", slot, shape) | ("lit", value)
    outputs: list         # slots


@dataclass(frozen=True)
class NativeLoop:
    """The native function that runs a loop whose bodies are native graph entries
    (``entry_codegen.emit_loop_entry``). Its arguments are array objects; ``*`` below is an
    argument index. Each iteration ``i`` (at index ``t``: ``i``, or ``length - 1 - i``
    when ``reverse``) points the *proxies* (array objects the bodies read and write) at
    their memory, calls the condition (while) and the body, then copies the results the
    body does not write itself. The carry ping-pongs: even iterations read set A and
    write set B, odd ones the other way round.

    - ``table``: ``*`` an int64 array of entry addresses, [body, condition];
    - ``body``/``cond``: ``(first *, count)`` of that entry's buffer objects, or None
      when it has no native steps (then it is not called);
    - ``cond_result``: ``*`` whose data holds the condition's bool (while), else None;
    - ``carry``: ``(* of set A, * of set B)`` per carry;
    - ``pointers``: ``(proxy *, kind, k, stride)``: kind ``"in"``/``"out"``: the carry
      ``k`` read/written this iteration; ``"x"``: ``* k``'s data plus ``t * stride`` bytes;
    - ``copies``: ``(dest kind, k, stride, source *, nbytes)``, destinations as above;
    - ``length``: the trip count (scan) or the bound (while; None: unbounded);
    - ``steps``: ``*`` of an int64 scalar taking the iteration count (while), else None.
    """

    n_args: int
    table: int
    body: tuple | None
    cond: tuple | None
    cond_result: int | None
    carry: tuple
    pointers: tuple
    copies: tuple
    length: int | None
    reverse: bool
    steps: int | None


@dataclass
class Blas:
    lhs: tuple
    rhs: tuple
    out: int
    dimension_numbers: tuple


@dataclass
class Conv:
    """conv_general_dilated as gemm calls on shifted views (backends/llvm/conv.py)."""

    lhs: tuple
    rhs: tuple
    out: int
    params: dict


@dataclass
class Lapack:
    """A linear-algebra equation as batched LAPACK calls (``backends/llvm/lapack.py``)."""

    eqn: object
    inputs: list          # ("slot", slot, shape) | ("lit", value)
    outputs: list         # slots
    scratch: list         # slots (in the arena): lapack.scratch_shapes


@dataclass(eq=False)
class Sort:
    """Sort ``inputs`` (C-contiguous slots of one shape) along ``dimension`` by the first
    ``num_keys`` of them, lexicographically and stably, into ``outputs``. ``scratch`` is
    an int64 slot of four sorted-length rows per part of ``rows_per_part`` rows (rows:
    the indices of the other dimensions), so parts can run on different threads."""

    shape: tuple
    dimension: int
    num_keys: int
    inputs: list          # slots
    dtypes: list
    outputs: list         # slots
    scratch: int
    rows: int
    rows_per_part: int


@dataclass
class Plan:
    n_inputs: int
    slots: list           # (shape, dtype) per slot
    consts: dict          # slot -> array
    steps: list           # Kernel | Fallback | Blas | Sort, in execution order
    outputs: list         # ("slot", slot, shape) | ("lit", value)
    # id(step) -> the user source lines ("file:line") of the equations planned into it
    sources: dict = field(default_factory=dict)
