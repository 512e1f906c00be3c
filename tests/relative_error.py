"""The worst relative error of computed values against reference values (mpmath's), where the
reference is a normal number; where it is (nearly) zero, the computed value must be too."""

import numpy as np


def worst_relative(got, want, zero=1e-290, zero_got=1e-280):
    """max ``|got - want| / |want|`` over the points where ``|want| >= zero``; elsewhere
    ``|got|`` must be below ``zero_got``."""
    got, want = np.asarray(got, np.float64).ravel(), np.asarray(want, np.float64).ravel()
    small = np.abs(want) < zero
    assert (np.abs(got[small]) < zero_got).all(), (got[small], want[small])
    if small.all():
        return 0.0
    return float(np.max(np.abs(got[~small] - want[~small]) / np.abs(want[~small])))
