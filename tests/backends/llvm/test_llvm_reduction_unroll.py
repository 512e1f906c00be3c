"""Pure reductions whose innermost loop is a short contiguous reduced one compile without
loop unrolling (codegen.unrolling_hurts: unrolled whole, LLVM vectorized the loop around
it with gathers instead); the others keep it. Either way the values are NumPy's."""

from __future__ import annotations

import numpy as np
import pytest
from functorch_core.backends.llvm import codegen, runtime
from functorch_core.backends.planning.plan import Kernel
from hypothesis import given
from hypothesis import strategies as st

import functorch_core as fc


def _compiled(f, x):
    exe = runtime.Executable(fc.make_graph(f)(x))
    kernels = [s for s in exe.plan.steps if isinstance(s, Kernel)]
    return exe, kernels, [pipeline for _, pipeline in exe.ir.parts]


@pytest.mark.parametrize("shape, axes", [((64, 16, 8, 8), (0, 2, 3)),    # BatchNorm's sums
                                         ((64, 16, 8, 8), (2, 3)),
                                         ((512, 64), (1,)),
                                         ((16, 8, 256), (0, 2))])
def test_a_pure_reduction_over_a_short_contiguous_axis_is_not_unrolled(shape, axes):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    exe, (kernel,), pipelines = _compiled(lambda a: (-a).sum(axis=axes), x)
    assert codegen.unrolling_hurts(kernel) and pipelines == ["small"]
    np.testing.assert_allclose(exe([x])[0], (-x).sum(axis=axes), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("f, shape", [
    (lambda a: (a.sum(axis=(0, 2, 3)), a * 2), (64, 16, 8, 8)),       # an elementwise store
    (lambda a: a.sum(axis=1), (4096, 16)),                             # a short inner loop
    (lambda a: a.sum(axis=1), (64, 1024)),                             # a long one
    (lambda a: a.sum(axis=0), (512, 128)),                             # a leading reduction
    (lambda a: a.argmax(axis=1), (1024, 64)),                          # an arg reduction
    (lambda a: a.T.sum(axis=1), (64, 512)),                            # strided innermost
])
def test_other_kernels_keep_unrolling(f, shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    exe, kernels, pipelines = _compiled(f, x)
    assert kernels and not any(codegen.unrolling_hurts(k) for k in kernels)
    assert "full" in pipelines
    want = f(x)
    want = want[0] if isinstance(want, tuple) else want
    np.testing.assert_allclose(exe([x])[0], want, rtol=1e-5, atol=1e-4)


@given(shape=st.lists(st.integers(1, 40), min_size=2, max_size=4),
       axes_mask=st.integers(1, 15), dtype=st.sampled_from([np.float32, np.float64]),
       name=st.sampled_from(["sum", "max", "min"]), seed=st.integers(0, 2 ** 16))
def test_reductions_match_numpy_whichever_pipeline(shape, axes_mask, dtype, name, seed):
    axes = tuple(d for d in range(len(shape)) if axes_mask >> d & 1) or (len(shape) - 1,)
    shape[-1] = shape[-1] * 4          # innermost loops of 4 to 160 points
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    reduce = getattr(np, name)
    got = fc.jit(lambda a: reduce(a, axis=axes), backend="cpu")(x)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, reduce(x, axis=axes), rtol=tol, atol=tol * 40)
