"""Subpackages reachable as attributes after a bare ``import functorch_core as fc``."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import functorch_core as fc


def _fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_lazy_subpackages_after_a_bare_import():
    out = _fresh("""
        import sys
        import numpy as np
        import functorch_core as fc
        assert "functorch_core.scipy" not in sys.modules       # imported on first use
        assert {"scipy", "data", "lax", "random", "nn", "optim", "map"} <= set(dir(fc))
        print(float(fc.scipy.special.erf(np.array(0.5))))
        loader = fc.data.DataLoader(fc.data.IterableWrapper(range(4)), batch_size=2)
        print([list(map(int, b)) for b in loader])
        print(fc.lax.fori_loop.__name__, fc.random.key.__name__, fc.nn.Linear.__name__,
              fc.optim.adam.__name__)
    """)
    erf, batches, names = out.splitlines()
    assert abs(float(erf) - 0.5204998778130465) < 1e-15
    assert batches == "[[0, 1], [2, 3]]"
    assert names == "fori_loop key Linear adam"


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'no_such_thing'"):
        _ = fc.no_such_thing
    assert not hasattr(fc, "no_such_thing")


def test_map_is_lax_map_and_a_star_import_keeps_the_builtin():
    assert fc.map is fc.lax.map
    out = _fresh("""
        from functorch_core import *
        print(map is __builtins__.map, scipy.special.__name__)
    """)
    assert out.split() == ["True", "functorch_core.scipy.special"]
