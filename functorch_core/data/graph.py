"""The pipeline graph: walk, search, rewrite and draw a DataPipe DAG.

A pipe's sources are the DataPipes in its attributes (see ``datapipe``). A pipe
read by several consumers (the buffer behind ``fork`` or ``demux``, a source
given to two ``zip`` calls) is one node with several parents. Every walk here
is iterative, so a thousand chained pipes do not hit the recursion limit.
"""

from __future__ import annotations

import warnings

import numpy as np

from .datapipe import _DataPipeBase

__all__ = ["traverse", "list_datapipes", "find", "replace", "remove_dp", "render", "sources",
           "apply_sharding", "apply_shuffle_settings", "apply_random_seed", "sharding_pipes"]


def _check(dp, fn: str) -> None:
    if not isinstance(dp, _DataPipeBase):
        raise TypeError(f"{fn}(dp): expected an IterDataPipe or MapDataPipe, got "
                        f"{type(dp).__name__}")


def sources(dp) -> list:
    """The DataPipes ``dp`` reads from directly, without repeats, in attribute order."""
    _check(dp, "sources")
    seen, out = set(), []
    for s in dp._datapipe_sources():
        if id(s) not in seen:
            seen.add(id(s))
            out.append(s)
    return out


def traverse(dp) -> dict:
    """The graph above ``dp`` as nested dicts, as TorchData's ``traverse_dps``.

    Args:
        dp (IterDataPipe or MapDataPipe): the last pipe of a pipeline.

    Returns:
        ``{id(dp): (dp, {id(source): (source, {...}), ...})}``. A pipe reached
        twice shares one inner dict, so the result is a DAG, not a tree.

    Example::

        >>> dp = IterableWrapper(range(4)).map(abs)
        >>> g = traverse(dp)
        >>> [p for p, _ in g.values()]
        [Mapper(fn=abs, input_col=None, output_col=None)]
    """
    _check(dp, "traverse")
    order = list_datapipes(dp)
    children: dict[int, dict] = {id(node): {} for node in order}
    for node in order:
        for s in sources(node):
            children[id(node)][id(s)] = (s, children[id(s)])
    return {id(dp): (dp, children[id(dp)])}


def list_datapipes(dp) -> list:
    """Every pipe of the graph above ``dp`` once, depth-first from ``dp`` (sources in order).

    The order is a function of how the pipeline was built, so it is the same in
    every process that unpickles the pipeline; the DataLoader seeds the random
    pipes by their position in it.
    """
    _check(dp, "list_datapipes")
    seen, order, stack = set(), [], [dp]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        stack.extend(reversed(sources(node)))
    return order


def find(dp, cls) -> list:
    """The pipes of the graph above ``dp`` (``dp`` included) that are instances of ``cls``.

    Args:
        dp (IterDataPipe or MapDataPipe): the last pipe of a pipeline.
        cls (type or tuple of types): what to look for.

    Example::

        >>> dp = IterableWrapper(range(8)).shuffle().sharding_filter()
        >>> find(dp, Shuffler)
        [Shuffler(buffer_size=10000)]
    """
    return [p for p in list_datapipes(dp) if isinstance(p, cls)]


def _swap(value, old, new):
    if value is old:
        return new, True
    if isinstance(value, list):
        hit = any(v is old for v in value)
        if hit:
            value[:] = [new if v is old else v for v in value]
        return value, hit
    if isinstance(value, tuple):
        if any(v is old for v in value):
            return type(value)(*(new if v is old else v for v in value)) if hasattr(
                value, "_fields") else tuple(new if v is old else v for v in value), True
        return value, False
    if isinstance(value, dict):
        keys = [k for k, v in value.items() if v is old]
        for k in keys:
            value[k] = new
        return value, bool(keys)
    return value, False


def replace(dp, old, new):
    """Put ``new`` wherever a pipe of the graph above ``dp`` reads from ``old``.

    The graph is changed in place (as TorchData's ``replace_dp``).

    Args:
        dp (IterDataPipe or MapDataPipe): the last pipe of a pipeline.
        old: a pipe of that graph.
        new: the pipe to read from instead.

    Returns:
        the new last pipe: ``new`` if ``dp is old``, else ``dp``.

    Raises:
        ValueError: ``old`` is not in the graph above ``dp``.
    """
    _check(new, "replace")
    if dp is old:
        return new
    found = False
    for node in list_datapipes(dp):
        for name, value in list(vars(node).items()):
            value2, hit = _swap(value, old, new)
            if hit:
                found = True
                if value2 is not value:
                    setattr(node, name, value2)
    if not found:
        raise ValueError(f"replace(dp, old={old!r}, new={new!r}): old is not in the graph "
                         f"above {dp!r}")
    return dp


def remove_dp(graph, datapipe):
    """Take ``datapipe`` out of a pipeline: its consumers read its source instead
    (TorchData's ``dataloader2.graph.remove_dp``).

    The graph is changed in place, as ``replace`` changes it.

    Args:
        graph (dict or DataPipe): the pipeline, as ``traverse`` returns it (as in
            TorchData) or as its last pipe.
        datapipe: a pipe of that graph with exactly one source.

    Returns:
        the rewritten pipeline in the form given: ``traverse`` of the new last
        pipe, or the new last pipe (the source of ``datapipe`` if that was last).

    Raises:
        RuntimeError: ``datapipe`` is a source, or reads from several pipes.
        ValueError: ``datapipe`` is not in the graph.

    Example::

        >>> dp = IterableWrapper(range(4)).map(abs).batch(2)
        >>> list(remove_dp(dp, find(dp, Mapper)[0]))
        [[0, 1], [2, 3]]
    """
    as_graph = isinstance(graph, dict)
    if as_graph:
        if len(graph) != 1:
            raise ValueError(f"remove_dp: expected a graph with one last pipe (from "
                             f"traverse), got {len(graph)}")
        last = next(iter(graph.values()))[0]
    else:
        last = graph
    _check(last, "remove_dp")
    inputs = sources(datapipe)
    if not inputs:
        raise RuntimeError(f"remove_dp: cannot remove the source DataPipe {datapipe!r} "
                           "from the graph")
    if len(inputs) > 1:
        raise RuntimeError(f"remove_dp: cannot remove {datapipe!r}, which reads from "
                           f"{len(inputs)} DataPipes")
    if all(p is not datapipe for p in list_datapipes(last)):
        raise ValueError(f"remove_dp: {datapipe!r} is not in the graph above {last!r}")
    new_last = replace(last, datapipe, inputs[0]) if last is not datapipe else inputs[0]
    return traverse(new_last) if as_graph else new_last


def render(dp) -> str:
    """A text drawing of the pipeline above ``dp``, the last pipe at the top.

    Each pipe is drawn once with a number; a pipe read by several consumers is
    drawn under the first and referred to as ``(see [n])`` under the others.

    Example::

        >>> print(render(IterableWrapper(range(4)).map(abs).batch(2)))
        [0] Batcher(batch_size=2, drop_last=False)
        └─ [1] Mapper(fn=abs, input_col=None, output_col=None)
           └─ [2] IterableWrapper
    """
    _check(dp, "render")
    numbers: dict[int, int] = {}
    lines = []
    # (pipe, prefix for its own line, prefix for its children's lines)
    stack = [(dp, "", "")]
    while stack:
        node, head, tail = stack.pop()
        if id(node) in numbers:
            lines.append(f"{head}(see [{numbers[id(node)]}] {type(node).__name__})")
            continue
        numbers[id(node)] = len(numbers)
        lines.append(f"{head}[{numbers[id(node)]}] {node!r}")
        srcs = sources(node)
        for i in reversed(range(len(srcs))):
            last = i == len(srcs) - 1
            stack.append((srcs[i], tail + ("└─ " if last else "├─ "),
                          tail + ("   " if last else "│  ")))
    return "\n".join(lines)


def sharding_pipes(dp, sharding_group=None) -> list:
    """The pipes above ``dp`` that shard by ``sharding_group`` (``None``: the DEFAULT group).

    Raises:
        RuntimeError: one of them reads from another (on one path the second
            would keep a share of a share and lose samples).
    """
    def takes(p):
        flt = getattr(p, "sharding_group_filter", None)
        return hasattr(p, "apply_sharding") and (flt is None or flt == sharding_group)

    found = [p for p in list_datapipes(dp) if takes(p)]
    for p in found:
        inner = [q for q in list_datapipes(p)[1:] if takes(q)]
        if inner:
            raise RuntimeError(f"{p!r} reads from {inner[0]!r} and both shard the same "
                               "instances; sharding twice on one path loses samples")
    return found


def apply_sharding(dp, num_of_instances: int, instance_id: int, sharding_group=None):
    """Shard every sharding pipe above ``dp`` (torch's ``graph_settings.apply_sharding``).

    Args:
        dp: the last pipe of a pipeline.
        num_of_instances (int): how many instances share the data.
        instance_id (int): which one this is.
        sharding_group (SHARDING_PRIORITIES, optional): the group. Default:
            ``None`` (the DEFAULT group).

    Returns:
        ``dp``.

    Raises:
        RuntimeError: a sharding pipe reads from another of the same group.
    """
    for p in sharding_pipes(dp, sharding_group):
        if sharding_group is None:
            p.apply_sharding(num_of_instances, instance_id)
        else:
            p.apply_sharding(num_of_instances, instance_id, sharding_group)
    return dp


def apply_shuffle_settings(dp, shuffle: bool | None = None):
    """Turn every shuffling pipe above ``dp`` on or off (torch's ``graph_settings``).

    Args:
        dp (IterDataPipe or MapDataPipe): the last pipe of a pipeline.
        shuffle (bool or None): default ``None`` leaves the pipes as they are.
            ``True`` on a graph without a shuffling pipe appends ``dp.shuffle()``
            (default buffer) with a warning, as TorchData does.

    Returns:
        the new last pipe: ``dp``, or the appended shuffler.

    Example::

        >>> dp = IterableWrapper(range(4)).shuffle()
        >>> apply_shuffle_settings(dp, shuffle=False) is dp, list(dp)
        (True, [0, 1, 2, 3])
    """
    if shuffle is None:
        return dp
    shufflers = [p for p in list_datapipes(dp) if hasattr(p, "set_shuffle")]
    if not shufflers and shuffle:
        warnings.warn("apply_shuffle_settings: `shuffle=True` was set, but the datapipe does not "
                      "contain a `Shuffler`. Adding one at the end. Be aware that the default "
                      "buffer size might not be sufficient for your task.",
                      UserWarning, stacklevel=2)
        dp = dp.shuffle()
        shufflers = [dp]
    for p in shufflers:
        p.set_shuffle(shuffle)
    return dp


def apply_random_seed(dp, seed: int):
    """Seed every random pipe above ``dp`` from ``seed`` (by position in ``list_datapipes``).

    Returns ``dp``. The DataLoader does this per epoch with its own derivation.
    """
    randoms = [p for p in list_datapipes(dp) if p._is_random]
    for p, s in zip(randoms, np.random.SeedSequence(seed).generate_state(len(randoms), np.uint32),
                    strict=True):
        p.set_seed(int(s))
    return dp
