"""The typed rule tables: one registration per key, errors that name places and tables."""

import importlib
import pkgutil
import re

import pytest
from functorch_core.ir import Primitive
from functorch_core.ir import primitives as P
from functorch_core.ir.tables import DuplicateRuleError, NoRuleError, Table

import functorch_core.transforms as transforms
from functorch_core.transforms import batching, transpose
from functorch_core.transforms.jvp import JVP


def _line_of(marker):
    """The line of this file holding ``marker`` (a comment at the end of that line)."""
    with open(__file__) as f:
        return next(i for i, text in enumerate(f, 1) if text.rstrip().endswith(marker))


def test_a_duplicate_is_rejected_naming_both_places():
    table = Table("demo")
    table.register(P.tanh, "first")  # first-registration
    with pytest.raises(DuplicateRuleError) as err:
        table.register(P.tanh, "second")  # second-registration
    message = str(err.value)
    assert "table 'demo'" in message and "primitive 'tanh'" in message
    assert f"{__file__}:{_line_of('# first-registration')}" in message
    assert f"{__file__}:{_line_of('# second-registration')}" in message
    assert table[P.tanh] == "first"


def test_a_missing_rule_raises_a_key_error_naming_table_and_primitive():
    table = Table("demo", [(P.exp, "rule")])
    with pytest.raises(KeyError) as err:
        table[P.tanh]
    assert isinstance(err.value, NoRuleError)
    assert str(err.value) == "table 'demo' has no rule for primitive 'tanh'"
    assert table.get(P.tanh) is None and table.get(P.tanh, 0) == 0


def test_include_keeps_each_rules_own_place_and_catches_duplicates_across_tables():
    one = Table("one", [(P.exp, "a"), (P.log, "b")])  # table-one
    two = Table("two")
    two.register(P.log, "c")  # table-two
    merged = Table("merged")
    merged.include(one)
    assert merged.site(P.exp) == f"{__file__}:{_line_of('# table-one')}"
    with pytest.raises(DuplicateRuleError, match=re.escape(
            f"first at {__file__}:{_line_of('# table-one')}, "
            f"again at {__file__}:{_line_of('# table-two')}")):
        merged.include(two)


def test_a_table_is_a_read_only_mapping_of_its_registrations():
    table = Table("demo", [(P.exp, 1), (P.log, 2)])
    assert len(table) == 2 and list(table) == [P.exp, P.log]
    assert P.exp in table and P.tanh not in table
    assert dict(table.items()) == {P.exp: 1, P.log: 2}
    with pytest.raises(TypeError):
        table[P.tanh] = 3
    assert table.unregister(P.exp) == 1 and P.exp not in table and len(table) == 1
    assert repr(table) == "Table('demo', 1 rules)"


def test_pairs_with_a_repeated_key_are_rejected():
    with pytest.raises(DuplicateRuleError, match="primitive 'exp' is registered twice"):
        Table("demo", [(P.exp, 1), (P.exp, 2)])


def test_a_rule_registered_in_a_fresh_table_is_looked_up():
    fake = Primitive("fake_table_key", lambda x: [x])
    table = Table("demo")
    table.register(fake, "rule")
    assert table[fake] == "rule"


_PUBLIC = {"JVP_RULES": JVP, "TRANSPOSE_RULES": transpose.TRANSPOSE,
           "BATCH_RULES": batching.RULES, "NOT_BATCHED_REASONS": batching.NOT_BATCHED}


def test_the_manifest_includes_every_rule_modules_tables_each_filled_by_its_module():
    seen = {name: 0 for name in _PUBLIC}
    counted = set()
    for info in pkgutil.iter_modules(transforms.__path__):
        module = importlib.import_module(f"functorch_core.transforms.{info.name}")
        for name, public in _PUBLIC.items():
            local = vars(module).get(name)
            if not isinstance(local, Table) or id(local) in counted:
                continue
            counted.add(id(local))
            for prim in local:
                assert public.get(prim) is local[prim], (
                    f"{info.name}.{name} has {prim.name}, missing from the manifest's table")
                assert public.site(prim) == local.site(prim)
                assert local.site(prim).startswith(module.__file__ + ":"), (
                    f"{info.name}.{name}[{prim.name}] was registered from another module")
            seen[name] += len(local)
    assert {name: len(public) for name, public in _PUBLIC.items()} == seen
