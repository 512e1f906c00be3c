"""Deterministic mode's switch, read by the backends; set through
``functorch_core.use_deterministic_algorithms``."""

state = {"enabled": False, "warn_only": False}
