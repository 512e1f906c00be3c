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


def reshard(states, rank, world_size):
    """The state of rank ``rank`` of ``world_size`` that continues the epoch the ranks of
    ``states`` (one map-style DataLoader state per old rank, in rank order) were in: the
    samples of that epoch none of them consumed are split between the new ranks, each
    exactly once (then the next epochs are the new world size's own).

    The state records the re-shard (``"reshards"``: each old world size and how many
    samples each of its ranks consumed), so a loader resuming from it, and a later
    re-shard within the same epoch, recompute the samples left from the epoch's order.

    Args:
        states (list[dict]): ``DataLoader.state_dict()`` of every old rank, in rank order.
        rank (int): the new rank.
        world_size (int): the new world size.

    Example::

        >>> new = reshard([s0, s1, s2], rank=1, world_size=2)   # 3 ranks -> 2
        >>> loader.load_state_dict(new)         # a DataLoader(..., rank=1, world_size=2)
    """
    call = f"reshard(rank={rank}, world_size={world_size})"
    if not isinstance(states, (list, tuple)) or not states:
        raise ValueError(f"{call}: expected the list of every old rank's state")
    old = len(states)
    for r, s in enumerate(states):
        check_fields(s)
        for key in ("seed", "num_workers", "batch_size", "drop_last"):
            if s[key] != states[0][key]:
                raise ValueError(f"{call}: rank {r}'s state has {key}={s[key]!r}, rank 0's "
                                 f"{states[0][key]!r}: not states of one job")
        if s["rank"] != r or s["world_size"] != old:
            raise ValueError(f"{call}: state {r} is rank {s['rank']} of {s['world_size']}, "
                             f"expected rank {r} of {old} (every old rank, in rank order)")
    epoch = min(s["epoch"] for s in states)
    current = [s for s in states if s["epoch"] == epoch]
    chains = {repr(s.get("reshards", [])) for s in current}
    if len(chains) > 1 or any(s["epoch"] > epoch + 1 or (s["epoch"] > epoch and
                                                         any(s["delivered"]))
                              for s in states):
        raise ValueError(f"{call}: the ranks' states are not in one epoch ({epoch}) or at "
                         f"the start of the next: their positions cannot be merged")
    chain = list(current[0].get("reshards", []))
    if len(current) < old or any(any(s["delivered"]) for s in current):
        per = states[0]["batch_size"] or 1
        chain.append({"world_size": old,
                      "consumed": ["all" if s["epoch"] > epoch else sum(s["delivered"]) * per
                                   for s in states]})
    n = max(states[0]["num_workers"], 1)
    return {**states[0], "rank": rank, "world_size": world_size, "epoch": epoch,
            "delivered": [0] * n, "active": list(range(n)), "pointer": 0, "reshards": chain}


def remaining(order, reshards):
    """What is left of an epoch's sample ``order`` after the re-shard stages ``reshards``:
    at each stage, old rank ``r`` of ``W`` had consumed the first ``consumed[r]`` samples
    of its share ``left[r::W]``."""
    left = list(order)
    for stage in reshards:
        w, consumed = stage["world_size"], stage["consumed"]
        if not (isinstance(w, int) and w >= 1 and isinstance(consumed, list)
                and len(consumed) == w):
            raise ValueError(f"DataLoader.load_state_dict: field 'reshards' has a stage "
                             f"{stage!r}: expected a world size and one count per rank")
        taken = set()
        for r, c in enumerate(consumed):
            share = range(r, len(left), w)
            taken.update(share if c == "all" else share[:c])
        left = [x for i, x in enumerate(left) if i not in taken]
    return left
