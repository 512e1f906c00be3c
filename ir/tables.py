"""Typed rule tables: one rule per primitive, each registered once, from a known place.

``Table[Primitive, Rule]`` is a read-only mapping that only ``register`` fills. A second
registration of a key is an error naming both places; looking up a missing key raises a
``KeyError`` naming the table and the key. The transform passes read their tables with
``get`` (``None`` for a missing rule) to raise their own errors.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


class DuplicateRuleError(ValueError):
    """A key registered twice in one table."""


class NoRuleError(KeyError):
    """A lookup of a key that a table has no rule for."""

    def __str__(self):
        return str(self.args[0])


def _describe(key) -> str:
    name = getattr(key, "name", None)
    return f"{type(key).__name__.lower()} '{name}'" if isinstance(name, str) else repr(key)


def caller_site(depth: int = 1) -> str:
    """``file:line`` of the caller ``depth`` frames above the function calling this."""
    frame = sys._getframe(depth + 1)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


class Table(Mapping[K, V]):
    """A named mapping from primitives to rules, filled by ``register`` only."""

    def __init__(self, name: str, pairs: Iterable[tuple[K, V]] = ()):
        """An empty table, or one holding ``pairs`` registered from the caller's line."""
        self.name = name
        self._rules: dict[K, V] = {}
        self._sites: dict[K, str] = {}
        self.get = self._rules.get
        site = caller_site()
        for key, rule in pairs:
            self.register(key, rule, site=site)

    def register(self, key: K, rule: V, *, site: str | None = None) -> V:
        """Add ``rule`` for ``key``; ``site`` (default: the caller's file:line) is where
        the registration is reported from."""
        site = caller_site() if site is None else site
        if key in self._rules:
            raise DuplicateRuleError(
                f"table '{self.name}': {_describe(key)} is registered twice: first at "
                f"{self._sites[key]}, again at {site}")
        self._rules[key] = rule
        self._sites[key] = site
        return rule

    def include(self, *tables: Table[K, V]) -> None:
        """Register every rule of ``tables``, each reported from its own registration."""
        for table in tables:
            for key, rule in table._rules.items():
                self.register(key, rule, site=table._sites[key])

    def unregister(self, key: K) -> V:
        """Remove and return the rule of ``key`` (a test's temporary rule)."""
        del self._sites[key]
        return self._rules.pop(key)

    def site(self, key: K) -> str:
        """Where the rule of ``key`` was registered."""
        return self._sites[key]

    def __getitem__(self, key: K) -> V:
        try:
            return self._rules[key]
        except KeyError:
            raise NoRuleError(f"table '{self.name}' has no rule for {_describe(key)}") from None

    def __contains__(self, key) -> bool:
        return key in self._rules

    def __iter__(self) -> Iterator[K]:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    def __repr__(self):
        return f"Table({self.name!r}, {len(self._rules)} rules)"
