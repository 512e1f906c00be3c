"""A check shared by the native-LAPACK tests: results equal bit for bit."""

import numpy as np


def assert_bitwise(got, want):
    """``got`` and ``want`` (sequences of arrays) have the same dtypes, shapes and bits."""
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_array_equal(g, w, strict=True)
