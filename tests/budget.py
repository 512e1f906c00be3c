"""Example budgets for hypothesis tests whose examples are expensive."""

from hypothesis import settings


def share(divisor: int, floor: int = 2) -> int:
    """A share of the active hypothesis profile's example budget (``max_examples``)."""
    return max(floor, settings.default.max_examples // divisor)
