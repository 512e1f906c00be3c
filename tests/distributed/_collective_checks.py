"""The body of the collective checks, run on every rank (imported by the scripts of
test_collectives.py): each rank rebuilds every rank's inputs (a function of the rank) and
compares each collective with NumPy on those copies."""

import collections

import numpy as np

import functorch_core as fc
import functorch_core.distributed as dist

DTYPES = ["bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64",
          "complex64", "complex128"]
Pair = collections.namedtuple("Pair", "left right")


def leaf(dtype, shape, r, salt=0):
    """Rank ``r``'s input: small integers (sums and products exact in every float dtype),
    int8 values near the top so that sums wrap, complex parts that order differently."""
    n = int(np.prod(shape))
    base = (np.arange(n) * 7 + r * 5 + salt * 3) % 11
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return ((base + r) % 3 == 0).reshape(shape)
    if dt.kind == "c":
        return (base + 1j * ((base * 5 + r) % 4)).astype(dt).reshape(shape)
    if dt == np.int8:
        return (base + 100).astype(dt).reshape(shape)
    return (base - (3 if dt.kind in "if" else 0)).astype(dt).reshape(shape)


def tree(r, salt=0):
    return {"w": leaf("float32", (3, 4), r, salt), "b": [leaf("int64", (5,), r, salt),
            leaf("float32", (), r, salt)], "p": Pair(leaf("bool", (2, 3), r, salt),
            leaf("float16", (0, 3), r, salt)), "none": None}


UFUNC = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def expected_reduce(stack, op):
    dt = stack.dtype
    if op == "mean" and dt.kind == "c":     # the exact sum's parts divided, each rounded once
        total = np.add.reduce(stack, axis=0)
        real = total.real.dtype.type(len(stack))
        return (total.real / real + 1j * (total.imag / real)).astype(dt)
    if op == "mean":
        return np.mean(stack, axis=0)
    if dt == np.float16:
        return UFUNC[op].reduce(stack.astype(np.float32), axis=0).astype(np.float16)
    return UFUNC[op].reduce(stack, axis=0, dtype=dt)


def same(got, want, what):
    got = np.asarray(got)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    np.testing.assert_array_equal(got, want, err_msg=what)


def run_all(report):
    r, n = dist.rank(), dist.world_size()
    checks = 0
    for dtype in DTYPES:
        for shape in [(), (0,), (4,), (2, 3)]:
            x = leaf(dtype, shape, r)
            before = x.copy()
            stack = np.stack([leaf(dtype, shape, q) for q in range(n)])
            ops = ["sum", "prod", "max", "min", "mean"]
            for op in ops:
                same(dist.all_reduce(x, op), expected_reduce(stack, op),
                     f"all_reduce {dtype}{shape} {op}")
                mine = np.stack([leaf(dtype, shape, r, salt=s) for s in range(n)])
                whole = np.stack([np.stack([leaf(dtype, shape, q, salt=s) for s in range(n)])
                                  for q in range(n)])
                same(dist.reduce_scatter(mine, op), expected_reduce(whole, op)[r],
                     f"reduce_scatter {dtype}{shape} {op}")
                checks += 2
            same(dist.all_gather(x), stack, f"all_gather {dtype}{shape}")
            for src in range(n):
                same(dist.broadcast(x, src), stack[src], f"broadcast {dtype}{shape} src={src}")
            np.testing.assert_array_equal(x, before)
            checks += 1 + n
    # pytrees: leaves of several dtypes in one call, structure kept, inputs untouched
    t = tree(r)
    trees = [tree(q) for q in range(n)]
    for op in ["sum", "mean", "max", dist.ReduceOp.PRODUCT, dist.ReduceOp.AVG]:
        got = dist.all_reduce(t, op)
        name = op.value if isinstance(op, dist.ReduceOp) else op
        assert got["none"] is None and isinstance(got["p"], Pair) and isinstance(got["b"], list)
        for path, g, leaves in [("w", got["w"], [x["w"] for x in trees]),
                                ("b0", got["b"][0], [x["b"][0] for x in trees]),
                                ("b1", got["b"][1], [x["b"][1] for x in trees]),
                                ("p.left", got["p"].left, [x["p"].left for x in trees]),
                                ("p.right", got["p"].right, [x["p"].right for x in trees])]:
            same(g, expected_reduce(np.stack(leaves), name), f"tree all_reduce {name} {path}")
            checks += 1
    gathered = dist.all_gather(t)
    same(gathered["b"][0], np.stack([x["b"][0] for x in trees]), "tree all_gather b0")
    same(gathered["p"].left, np.stack([x["p"].left for x in trees]), "tree all_gather left")
    same(dist.broadcast(t, n - 1)["w"], trees[n - 1]["w"], "tree broadcast")
    np.testing.assert_array_equal(t["w"], tree(r)["w"])
    # Python scalars and NumPy scalars
    same(dist.all_reduce(2.5), np.asarray(2.5 * n), "python float")
    same(dist.all_reduce({"k": 3, "f": True}, "sum")["k"], np.asarray(3 * n), "python int")
    same(dist.all_reduce(np.float32(r), "max"), np.asarray(np.float32(n - 1)), "np scalar")
    # a big-endian input: reduced as its values, the result in native byte order
    be = (np.arange(4.0) + r).astype(">f4")
    same(dist.all_reduce(be), sum(np.arange(4.0, dtype=np.float32) + q for q in range(n)),
         "big-endian")
    # a non-contiguous input
    m = np.arange(24.0).reshape(4, 6)[:, ::2] + r
    same(dist.all_reduce(m), sum(np.arange(24.0).reshape(4, 6)[:, ::2] + q for q in range(n)),
         "strided")
    checks += 9
    # send / recv around a ring
    if n > 1:
        nxt, prv = (r + 1) % n, (r - 1) % n
        if r % 2 == 0:
            dist.send(t, nxt, tag=3)
            got = dist.recv(t, prv, tag=3)
        else:
            got = dist.recv(t, prv, tag=3)
            dist.send(t, nxt, tag=3)
        same(got["w"], trees[prv]["w"], "recv w")
        same(got["p"].left, trees[prv]["p"].left, "recv left")
        checks += 2
    report(["checks", checks])


def mismatches(report):
    """Each case differs on the last rank only; every rank must raise, naming the leaf."""
    r, n = dist.rank(), dist.world_size()
    odd = r == n - 1
    cases = {
        "shape": ({"a": np.ones(3), "b": np.ones(4 + odd)}, "sum"),
        "dtype": ({"a": np.ones(3), "b": np.ones(4, np.float32 if odd else np.float64)},
                  "sum"),
        "structure": ({"a": np.ones(3), **({"c": np.ones(1)} if odd else {})}, "sum"),
        "op": ({"a": np.ones(3)}, "max" if odd else "sum"),
        "leaf": ({"a": np.ones(3), "b": "text" if odd else np.ones(2)}, "sum"),
    }
    for name, (t, op) in cases.items():
        try:
            dist.all_reduce(t, op)
        except (dist.DistributedError, TypeError) as e:
            report([name, str(e)])
        else:
            report([name, None])
    try:
        dist.all_gather({"a": np.ones((2, 3 if odd else 2))})
    except dist.DistributedError as e:
        report(["all_gather", str(e)])
    if n > 1:
        if r == 0:
            dist.send({"x": np.ones(3)}, 1, tag=9)
        if r == 1:
            try:
                dist.recv({"x": np.ones(4)}, 0, tag=9)
            except dist.DistributedError as e:
                report(["recv", str(e)])
    # the world is still usable after every mismatch
    report(["after", float(dist.all_reduce(np.ones(())))])


def in_graph(report):
    """Inside jit the collectives are lax.parallel's over WORLD: the same values as eager."""
    r, n = dist.rank(), dist.world_size()
    t = {"w": leaf("float32", (3, 4), r), "b": leaf("float64", (5,), r)}
    for op in ["sum", "mean", "max", "min"]:
        got = fc.jit(lambda x, op=op: dist.all_reduce(x, op))(t)
        want = dist.all_reduce(t, op)
        for k in t:
            same(got[k], want[k], f"jit all_reduce {op} {k}")
    same(fc.jit(dist.all_gather)(t)["w"], dist.all_gather(t)["w"], "jit all_gather")
    rs = {"w": np.stack([leaf("float32", (4,), r, salt=s) for s in range(n)])}
    for op in ["sum", "mean"]:
        same(fc.jit(lambda x, op=op: dist.reduce_scatter(x, op))(rs)["w"],
             dist.reduce_scatter(rs, op)["w"], f"jit reduce_scatter {op}")
    errors = []
    for fn in [lambda x: dist.all_reduce(x, "prod"), lambda x: dist.broadcast(x, 0)]:
        try:
            fc.jit(fn)(t)
        except NotImplementedError as e:
            errors.append(str(e).split(":")[0])
    report(["in_graph", errors])
