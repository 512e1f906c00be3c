"""The primitive specs (ir/specs.py): complete, true to the interpreter, and covered by the
backend tables derived from them."""

import numpy as np
import pytest
from functorch_core.backends.cuda import scalar as cuda_scalar
from functorch_core.backends.interpreter.core import IMPLS
from functorch_core.backends.llvm import complex_ops, engine, ops
from functorch_core.ir import AbstractArray
from functorch_core.ir import primitives as P
from functorch_core.ir.specs import ELEMENTWISE, LINEAR, SPECS, libm_names

ELEMENTWISE_FAMILIES = {"unary", "binary", "select", "convert", "special3"}
ROWS = [P.ALL[s.name] for s in ELEMENTWISE]
# type rules written out in ir/primitives/elementwise.py instead of built from the spec's kinds
CUSTOM_RULES = {P.polygamma, P.bessel_jv, P.betainc, P.betainc_grad, P.select, P.convert,
                P.reduce_precision}
PARAMS = {P.polygamma: {"order": 1}, P.reduce_precision: {"exponent_bits": 8, "mantissa_bits": 7}}
# linear in each operand alone (the other held fixed), not in both together
PRODUCTS = {P.mul}
DOMAIN = {P.acosh: (1.1, 3.0)}
_rng = np.random.default_rng(0)


def _operands(prim, n, kind):
    if kind == "b":
        return [_rng.random(6) < 0.5 for _ in range(n)]
    if kind in "iu":
        return [_rng.integers(1, 6, 6).astype(kind + "8") for _ in range(n)]
    xs = [_rng.uniform(*DOMAIN.get(prim, (0.1, 0.9)), 6) for _ in range(n)]
    if prim is P.select:
        xs[0] = xs[0] < 0.5
    return [x + 1j * _rng.uniform(0.1, 0.9, 6) for x in xs] if kind == "c" else xs


def _arity(prim):
    return {"unary": 1, "binary": 2, "select": 3, "convert": 1, "special3": 3}[prim.family]


def test_every_elementwise_primitive_has_its_spec():
    elementwise = {p.name for p in P.ALL.values() if p.family in ELEMENTWISE_FAMILIES}
    assert elementwise == set(SPECS)
    for spec in ELEMENTWISE:
        assert P.ALL[spec.name].spec is spec
        assert P.ALL[spec.name].family == spec.family
    assert all(p.spec is not None and p.spec.name == p.name for p in P.ALL.values())
    assert set(LINEAR) <= set(P.ALL) - set(SPECS)


def test_every_spec_row_declares_its_primitive_under_its_attribute():
    for spec in ELEMENTWISE:
        prim = getattr(P, spec.attr)
        assert prim is P.ALL[spec.name] and prim.spec is spec
        assert spec.attr in P.elementwise.__all__
    assert P.not_.name == "not" and P.and_.name == "and" and P.or_.name == "or"
    assert P.abs is not abs and P.complex is not complex


@pytest.mark.parametrize("spec", [s for s in ELEMENTWISE if s.family in ("unary", "binary")
                                  and P.ALL[s.name] not in CUSTOM_RULES], ids=lambda s: s.name)
def test_result_dtype_follows_the_spec(spec):
    kind = "f" if "f" in spec.kinds else spec.kinds[0]
    dt = np.dtype({"b": np.bool_, "i": np.int32, "u": np.uint32, "f": np.float32,
                   "c": np.complex64}[kind])
    want = {"same": dt, "real": np.dtype(np.float32) if dt.kind == "c" else dt,
            "bool": np.dtype(np.bool_), "complex": np.dtype(np.complex64)}[spec.result]
    (out,) = P.ALL[spec.name].abstract_eval(*[AbstractArray((3,), dt)] * _arity(P.ALL[spec.name]))
    assert out.dtype == want


@pytest.mark.parametrize("prim", [p for p in ROWS if p.spec.numpy], ids=lambda p: p.name)
def test_reference_matches_the_interpreter(prim):
    kind = "f" if "f" in prim.spec.kinds else prim.spec.kinds[0]
    xs = _operands(prim, _arity(prim), kind)
    params = PARAMS.get(prim, {})
    want = prim.spec.reference(*((params["order"],) if params else ()), *xs)
    got = IMPLS[prim](*xs, **params)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-15, equal_nan=True)


@pytest.mark.parametrize("prim", [p for p in ROWS if p not in CUSTOM_RULES],
                         ids=lambda p: p.name)
def test_type_rule_accepts_the_spec_kinds(prim):
    for kind, dt in zip("biufc", (np.bool_, np.int32, np.uint8, np.float32, np.complex64),
                        strict=True):
        avals = [AbstractArray((3,), np.dtype(dt))] * _arity(prim)
        if kind in prim.spec.kinds:
            prim.abstract_eval(*avals)
        else:
            with pytest.raises(TypeError):
                prim.abstract_eval(*avals)


# reduce_precision is linear as JAX's autodiff treats it (its tangent and cotangent are
# rounded alike), not exactly: rounding is not additive
@pytest.mark.parametrize("prim", [p for p in ROWS if p.spec.is_linear
                                  and p is not P.reduce_precision], ids=lambda p: p.name)
def test_linear_in_the_linear_operands(prim):
    dt = "f" if prim in (P.complex, P.convert) else "c" if prim.spec.kinds == "c" else "f"
    base = _operands(prim, _arity(prim), dt)
    groups = [(i,) for i in prim.spec.linear] if prim in PRODUCTS else [prim.spec.linear]
    params = {"new_dtype": np.dtype(np.float32)} if prim is P.convert else {}
    for group in groups:
        xs, ys = list(base), list(base)
        for i in group:
            ys[i] = _operands(prim, 1, dt)[0]
        both = [x + 3 * y if i in group else x for i, (x, y) in enumerate(zip(xs, ys,
                                                                             strict=True))]
        got = IMPLS[prim](*both, **params)
        want = IMPLS[prim](*xs, **params) + 3 * IMPLS[prim](*ys, **params)
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_llvm_lowers_and_binds_every_libm_function_the_specs_name():
    for prim in ROWS:
        if prim.spec.libm:
            assert prim in ops.RULES, prim.name
        if prim.spec.clibm:
            assert complex_ops.LIBM_COMPLEX[prim] == prim.spec.clibm
            assert prim in complex_ops.COMPLEX_RULES, prim.name
    assert set(libm_names()) <= set(engine._LIBM_NAMES)
    libm = engine.libm()
    for name in engine._LIBM_NAMES:
        assert hasattr(libm, name) and hasattr(libm, name + "f"), name


def test_cuda_renders_every_math_function_the_specs_name():
    for prim in ROWS:
        if prim.spec.cuda:
            assert cuda_scalar.gap(prim, np.float64) is None, prim.name
            args = ["x", "y"][:_arity(prim)]
            text = cuda_scalar.op_text(prim, np.float64, prim.abstract_eval(
                *[AbstractArray((), np.dtype(np.float64))] * len(args))[0].dtype, args, {})
            assert f"F_{prim.spec.cuda}_f64(" in text, (prim.name, text)


def test_cuda_simulator_binds_every_function_a_kernel_names():
    pytest.importorskip("numba")
    ns = {}
    cuda_scalar.bind(ns, simulated=True)
    for prim in ROWS:
        if prim.spec.cuda:
            x = np.float64(1.5 if prim is P.acosh else 0.5)
            f = ns[f"F_{prim.spec.cuda}_f64"]
            got = f(*[x] * _arity(prim))
            want = prim.spec.reference(*[np.full(1, x)] * _arity(prim))[0]
            np.testing.assert_equal(got, want)

