"""The reference interpreter's corner cases that the op tables do not reach."""

import numpy as np
from functorch_core.backends.interpreter import IMPLS
from functorch_core.ir import primitives as P


def test_gather_with_no_indexed_axis_broadcasts_over_the_index_batch():
    x = np.arange(3.0)
    idx = np.zeros((2, 4, 0), np.int64)
    out = IMPLS[P.gather](x, idx, axes=())
    np.testing.assert_array_equal(out, np.broadcast_to(x, (2, 4, 3)))


def test_scatter_add_with_no_indexed_axis_sums_every_update():
    x = np.arange(3.0)
    out = IMPLS[P.scatter_add](x, np.zeros((2, 4, 0), np.int64), np.ones((2, 4, 3)), axes=())
    np.testing.assert_array_equal(out, x + 8)
    np.testing.assert_array_equal(x, np.arange(3.0))   # the operand is not written


def test_scatter_with_no_indexed_axis_keeps_the_last_write():
    out = IMPLS[P.scatter](np.zeros(()), np.zeros((2, 0), np.int64), np.array([5.0, 7.0]),
                           axes=())
    assert out == 7.0


def test_gather_clamps_out_of_range_indices():
    x = np.arange(12.0).reshape(3, 4)
    out = IMPLS[P.gather](x, np.array([[5], [-2]]), axes=(0,))
    np.testing.assert_array_equal(out, x[[2, 0]])


def test_setitem_through_an_empty_reversed_slice_writes_nothing():
    from functorch_core.ir.indexing import normalize
    x = np.zeros((1, 2))
    index = (slice(-2, None, -1),)           # empty on an axis of length 1
    indexer, _ = normalize(x.shape, index, lambda e: False)
    IMPLS[P.setitem](x, np.ones(()), indexer=indexer)
    np.testing.assert_array_equal(x, np.zeros((1, 2)))
