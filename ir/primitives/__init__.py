"""The primitive catalogue: a small, closed, lax-like set with shape/dtype rules.

One module per family: ``elementwise`` (declared from the rows of ``ir/specs.py``),
``layout``, ``reductions``, ``windows``, ``fourier``, ``structure``, ``collectives``;
control flow and linear algebra live in ``ir/control_flow.py`` and ``ir/linalg.py``. This
package gathers them:
``P.tanh``, ``P.reshape``, ``P.cond``. ``ALL`` maps every name to its primitive; tests walk
it to make sure every transform and backend covers every primitive.
"""

from __future__ import annotations

from ..catalogue import ALL, complex_of  # noqa: F401
from ..control_flow import CONTROL_FLOW, cond, scan, while_loop  # noqa: F401
from ..linalg import (  # noqa: F401
    LINALG,
    cholesky,
    det,
    eig,
    eigh,
    lu,
    lu_pivots_to_permutation,
    qr,
    slogdet,
    slogdet_inv_t,
    solve,
    sqrtm,
    svd,
    sylvester,
    triangular_solve,
)
from .collectives import *  # noqa: F403
from .elementwise import *  # noqa: F403
from .fourier import *  # noqa: F403
from .layout import *  # noqa: F403
from .reductions import *  # noqa: F403
from .structure import *  # noqa: F403
from .windows import *  # noqa: F403

MUTATIONS = [p for p in ALL.values() if p.mutates]
