"""The fields of ``DataLoader.state_dict()`` and the checks ``load_state_dict`` makes: a
state that is not one this loader wrote, or whose progress is corrupt, is refused by
field."""

VERSION = 1
FIELDS = ("version", "seed", "rank", "world_size", "num_workers", "batch_size", "drop_last",
          "epoch", "delivered", "active", "pointer")


def _bad(state, field, why):
    raise ValueError(f"DataLoader.load_state_dict: field {field!r} is {state[field]!r}: {why}")


def check_fields(state):
    """Refuse a state that is not a ``state_dict`` of this version, naming the field."""
    if not isinstance(state, dict):
        raise TypeError(f"DataLoader.load_state_dict: state must be a dict from state_dict(), "
                        f"got {type(state).__name__}")
    for field in FIELDS:
        if field not in state:
            raise ValueError(f"DataLoader.load_state_dict: the state has no field {field!r}")
    if state["version"] != VERSION:
        _bad(state, "version", f"this loader reads version {VERSION}")


def check_progress(state, n):
    """Refuse corrupt progress fields (``n`` result streams), naming the field."""
    def bad(field, why):
        _bad(state, field, why)

    def count(v):
        return type(v) is int and v >= 0        # bool is not an int here
    if not count(state["seed"]) or state["seed"] >= 2**62:
        bad("seed", "it must be an int in [0, 2**62)")
    if not count(state["epoch"]):
        bad("epoch", "it must be an int >= 0")
    d, active, pointer = state["delivered"], state["active"], state["pointer"]
    if not isinstance(d, list) or len(d) != n or not all(count(v) for v in d):
        bad("delivered", f"it must be a list of {n} counts >= 0 (one per worker)")
    if not isinstance(active, list) or not all(type(w) is int for w in active) or \
            active != sorted(set(active)) or any(not 0 <= w < n for w in active):
        bad("active", f"it must be an increasing list of distinct workers in [0, {n})")
    if not count(pointer) or pointer >= max(len(active), 1):
        bad("pointer", f"it must be an int in [0, {max(len(active), 1)}) (a position in "
                       "'active')")
