"""functionalize: a function that writes into arrays, its graph before and after, its gradient.

Run: python examples/functionalize.py
"""

import os
import sys

import numpy as np

try:
    import functorch_core as fc
except ModuleNotFoundError:     # run from a checkout that is not installed
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import functorch_core as fc


def smooth(x):
    """Writes into its argument through views, and into a buffer of its own."""
    inner = x[1:-1]                      # a view of x
    inner *= 0.5                         # writes into x
    x[::-1][:2] += 1.0                   # a reversed, strided view: writes x[-1], x[-2]
    buf = fc.numpy.zeros(x.shape)         # traced: a fresh buffer
    buf[1:] = x[:-1]                     # shifted copy of the updated x
    np.add.at(buf, np.array([0, 0]), x[0])   # accumulates twice
    return (buf * x).sum()


def main():
    x = np.arange(1.0, 6.0)

    eager_x = x.copy()
    eager = smooth(eager_x)
    print("eager NumPy:        ", eager, "x afterwards:", eager_x)

    print("\nraw graph (make_graph): mutation and views as traced")
    print(fc.make_graph(smooth)(x))

    print("\nfunctionalized graph: pure updates; the last line writes the new x back")
    print(fc.make_graph(fc.functionalize(smooth))(x))

    fx = x.copy()
    print("\nfunctionalize(smooth):", fc.functionalize(smooth)(fx), "x afterwards:", fx)
    jx = x.copy()
    print("jit(smooth):          ", fc.jit(smooth)(jx), "x afterwards:", jx)

    g = fc.grad(smooth)(x.copy())
    h = 1e-6
    fd = [(smooth(x + h * e) - smooth(x - h * e)) / (2 * h) for e in np.eye(len(x))]
    print("\ngrad(smooth):       ", g)
    print("finite differences: ", np.round(fd, 6))


if __name__ == "__main__":
    main()
