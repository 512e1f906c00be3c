"""A profiler for jit calls, compilation, transforms and native kernels, shaped like
``torch.profiler``.

Example::

    >>> import functorch_core as fc
    >>> f = fc.jit(lambda x: np.tanh(x @ x.T).sum(axis=1))
    >>> with fc.profiler.profile() as prof:
    ...     with fc.profiler.record_function("two calls"):
    ...         f(x)
    ...         f(x)
    >>> print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    >>> prof.export_chrome_trace("trace.json")     # open in Perfetto or chrome://tracing

Nothing is recorded, and the jit fast path is untouched, unless a profile is active.
While one is, every jit call takes the general path and runs the executable's
instrumented twin (``backends/llvm/profiled.py``), so per-call times under the profiler
include that overhead (a few microseconds per call and per step).
"""

from __future__ import annotations

import enum
import json
import os
import warnings

from functorch_core.backends import mpi, profiling

from . import devices
from .api import drop_fast_paths

__all__ = ["EventList", "FunctionEventAvg", "ProfilerActivity", "profile", "record_function"]


class ProfilerActivity(enum.Enum):
    """What a :class:`profile` records, as ``torch.profiler.ProfilerActivity``.

    ``CPU``: the host-side events (every event functorch_core records). ``CUDA``:
    accepted for torch code; GPU kernels are not timed on the device, so GPU work shows
    as the host-side events of the calls that launch it (``jit(f)`` with
    ``backend='cuda'``). Without a GPU, asking for ``CUDA`` warns and records the CPU
    activity only, as torch does.
    """

    CPU = "cpu"
    CUDA = "cuda"


def _check_activities(activities) -> frozenset:
    """``activities`` as a set of ProfilerActivity, or a clear error."""
    if activities is None:
        return frozenset({ProfilerActivity.CPU})
    try:
        acts = list(activities)
    except TypeError:
        raise TypeError("profile(activities=...): pass a list of ProfilerActivity "
                        f"(e.g. [ProfilerActivity.CPU]), got {activities!r}") from None
    for a in acts:
        if not isinstance(a, ProfilerActivity):
            raise TypeError(f"profile(activities=...): {a!r} is not a ProfilerActivity; use "
                            "functorch_core.profiler.ProfilerActivity.CPU or .CUDA")
    acts = frozenset(acts) or frozenset({ProfilerActivity.CPU})      # [] means the default
    if ProfilerActivity.CPU not in acts:
        raise ValueError("profile(activities=[ProfilerActivity.CUDA]): functorch_core records "
                         "host-side events only (GPU kernels are not timed on the device); "
                         "include ProfilerActivity.CPU")
    if ProfilerActivity.CUDA in acts:
        if "cuda" not in devices.backends_available():
            warnings.warn("profile(activities=[..., ProfilerActivity.CUDA]): no CUDA device "
                          "is available (functorch_core.backends_available() has no 'cuda'); "
                          "recording the CPU activity only", UserWarning, stacklevel=3)
            acts = acts - {ProfilerActivity.CUDA}
    return acts

_SORT_KEYS = ("self_cpu_time_total", "cpu_time_total", "cpu_time", "self_cpu_time", "count")


class FunctionEventAvg:
    """The events of one name (and input shapes, when grouped by them), summed.

    Attributes:
        key: the event name.
        count: how many events.
        cpu_time_total: their summed duration in microseconds.
        self_cpu_time_total: the same, less the events nested inside them.
        cpu_time: the average duration (``cpu_time_total / count``).
        self_cpu_time: the average self time.
        input_shapes: the recorded input shapes when grouped by them, else None.
    """

    def __init__(self, key, input_shapes=None):
        self.key, self.input_shapes = key, input_shapes
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0

    def add(self, ev):
        self.count += 1
        self.cpu_time_total += ev.duration_ns / 1e3
        self.self_cpu_time_total += ev.self_ns / 1e3

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / max(self.count, 1)

    @property
    def self_cpu_time(self) -> float:
        return self.self_cpu_time_total / max(self.count, 1)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key!r} count={self.count} "
                f"self_cpu_time_total={self.self_cpu_time_total:.1f}us "
                f"cpu_time_total={self.cpu_time_total:.1f}us>")


def _us(t: float) -> str:
    if t >= 1e6:
        return f"{t / 1e6:.3f}s"
    if t >= 1e3:
        return f"{t / 1e3:.3f}ms"
    return f"{t:.3f}us"


class EventList(list):
    """A list of :class:`FunctionEventAvg` (what ``key_averages`` returns)."""

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_name_column_width: int = 55) -> str:
        """The rows as a text table.

        Args:
            sort_by (str, default ``None``): ``"self_cpu_time_total"``,
                ``"cpu_time_total"``, ``"cpu_time"`` (average), ``"self_cpu_time"``
                (average) or ``"count"``, largest first; ``None`` keeps the order in
                which the names first ended.
            row_limit (int, default 100): at most this many rows (``-1``: all).
            max_name_column_width (int, default 55): longer names are cut.

        Returns:
            The table: name, self CPU time (total and % of all self time), CPU total
            time (and %), average CPU time, number of calls (and input shapes when
            the averages were grouped by them), and a footer with the self time total.

        Example::

            >>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=5))
        """
        rows = list(self)
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise ValueError(f"table: sort_by must be one of {_SORT_KEYS}, got {sort_by!r}")
            rows.sort(key=lambda r: getattr(r, sort_by), reverse=True)
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        total_self = sum(r.self_cpu_time_total for r in self) or 1.0
        shapes = any(r.input_shapes is not None for r in self)
        width = max([len("Name")] + [min(len(r.key), max_name_column_width) for r in rows])
        head = ["Name".ljust(width), "Self CPU %", "Self CPU", "CPU total %", "CPU total",
                "CPU time avg", "# of Calls"] + (["Input Shapes"] if shapes else [])
        widths = [len(h) if i else width for i, h in enumerate(head)]
        widths[1:7] = [max(w, 12) for w in widths[1:7]]
        line = "-" * (sum(widths) + 2 * (len(widths) - 1))

        def fmt(cells):
            return "  ".join(c.ljust(w) if i in (0, 7) else c.rjust(w)
                             for i, (c, w) in enumerate(zip(cells, widths, strict=True)))
        out = [line, fmt(head), line]
        for r in rows:
            name = r.key if len(r.key) <= max_name_column_width else \
                r.key[:max_name_column_width - 3] + "..."
            cells = [name, f"{100 * r.self_cpu_time_total / total_self:.2f}%",
                     _us(r.self_cpu_time_total),
                     f"{100 * r.cpu_time_total / total_self:.2f}%", _us(r.cpu_time_total),
                     _us(r.cpu_time), str(r.count)]
            if shapes:
                cells.append(str(r.input_shapes or ""))
            out.append(fmt(cells))
        out += [line, f"Self CPU time total: {_us(sum(r.self_cpu_time_total for r in self))}"]
        return "\n".join(out)


class profile:
    """Record what functorch_core does inside a ``with`` block.

    Events: each ``jit`` call (``jit(f)``); on a new signature its trace, functionalize
    and simplify passes and the backend compile (for the cpu backend: ``partition``,
    ``llvm`` and, per LLVM module, ``llvm: optimize+compile`` or ``llvm: disk cache
    hit``; a module this process already holds records nothing); each step of a
    cpu executable (``kernel[mul+add+tanh]`` named by its fused primitives,
    ``dot_general (blas)``, ``conv_general_dilated (blas)`` or ``(native)``, ``sort``,
    ``loop[scan]``, ``fallback[prim]`` for an equation the interpreter runs), with a
    ``... part`` event on each thread a split kernel or sort runs on; the building of
    a transformed graph (``transform grad(f)``) and each eager transform call
    (``grad(f)``); and :func:`record_function` ranges. Events nest per thread.

    A graph whose kernels are all small runs as one native call and is recorded as one
    ``native entry`` event (its kernels listed in the event's args); the body of a
    control-flow loop runs inside its ``loop[...]`` event without events of its own.

    Args:
        activities (list of :class:`ProfilerActivity` or None, default ``None``): as
            torch's; ``None`` (or empty) means ``[ProfilerActivity.CPU]``, which records
            every event above. ``ProfilerActivity.CUDA`` is accepted next to ``CPU`` (GPU
            work appears as the host-side events of its calls; without a GPU it warns and
            is dropped); ``CUDA`` alone is refused, there being no device-side timing.
        record_shapes (bool, default ``False``): record the shapes and dtypes of each
            jit call's arguments and of each kernel's iteration space (see
            ``key_averages(group_by_input_shape=True)``).
        enabled (bool, default ``True``): ``False`` makes the block record nothing.

    Only one profile may be active at a time (in any thread).

    Example::

        >>> with profile(record_shapes=True) as prof:
        ...     f(x)
        >>> prof.key_averages(group_by_input_shape=True).table(row_limit=5)
        >>> with profile(activities=[ProfilerActivity.CPU]) as prof:   # torch's spelling
        ...     f(x)
    """

    def __init__(self, *, activities=None, record_shapes: bool = False,
                 enabled: bool = True):
        self.activities = _check_activities(activities)
        self.record_shapes, self.enabled = record_shapes, enabled
        self._recorder = None
        self._events: list = []

    def __enter__(self):
        if not self.enabled:
            return self
        if profiling.recorder is not None:
            raise RuntimeError("functorch_core.profiler.profile: another profile is already "
                               "active; nest record_function ranges instead")
        self._recorder = profiling.Recorder(self.record_shapes)
        profiling.recorder = self._recorder
        drop_fast_paths()       # every jit call now takes the general, profiled path
        return self

    def __exit__(self, *exc):
        if self._recorder is not None:
            profiling.recorder = None
            self._events = self._recorder.finish()
        return False

    def events(self) -> list:
        """Every recorded event, in the order they started: each has ``name``, ``cat``,
        ``start``/``end`` (``time.perf_counter_ns``), ``duration_ns``, ``self_ns``,
        ``tid``, ``thread_name``, ``args``, ``parent`` and ``children`` (the tree, per
        thread)."""
        return sorted(self._events, key=lambda e: e.start)

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        """The events summed per name (and per recorded input shapes when
        ``group_by_input_shape``), as an :class:`EventList` whose ``table()`` prints
        them.

        Args:
            group_by_input_shape (bool, default ``False``): one row per (name, input
                shapes); needs ``profile(record_shapes=True)``.
        """
        rows: dict = {}
        for ev in self.events():
            shapes = None
            if group_by_input_shape and ev.args:
                shapes = ev.args.get("input_shapes", ev.args.get("shape"))
            key = (ev.name, repr(shapes))
            row = rows.get(key)
            if row is None:
                row = rows[key] = FunctionEventAvg(ev.name, shapes if group_by_input_shape
                                                   else None)
            row.add(ev)
        return EventList(rows.values())

    def export_chrome_trace(self, path) -> None:
        """Write the events as Chrome trace-event JSON (complete ``"X"`` events in
        microseconds, one track per thread), loadable in Perfetto or chrome://tracing.

        In a distributed job, give every rank the same directory: ``path`` naming a
        directory writes ``trace.rank<R>.json`` there (``R`` the rank in
        ``functorch_core.distributed``'s world, 0 before ``init()``), with the rank as the
        process's name and times on the machine's monotonic clock, so that the ranks of
        one machine line up when the files are opened together.

        Args:
            path (str or os.PathLike): the file to write, or an existing directory.

        Example::

            >>> prof.export_chrome_trace("traces/")   # traces/trace.rank0.json, ...rank1...
        """
        events = self.events()
        t0 = events[0].start if events else 0
        pid = os.getpid()
        trace, threads = [], {}
        if os.path.isdir(path):
            rank = mpi.world().rank if mpi.is_initialized() else 0
            path, t0 = os.path.join(path, f"trace.rank{rank}.json"), 0
            trace.append({"name": "process_name", "ph": "M", "pid": pid,
                          "args": {"name": f"rank {rank}"}})
        for ev in events:
            threads.setdefault(ev.tid, ev.thread_name)
            item = {"name": ev.name, "cat": ev.cat, "ph": "X", "pid": pid, "tid": ev.tid,
                    "ts": (ev.start - t0) / 1e3, "dur": ev.duration_ns / 1e3}
            if ev.args:
                item["args"] = ev.args
            trace.append(item)
        trace += [{"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                   "args": {"name": name}} for tid, name in threads.items()]
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)


class record_function:
    """Mark a range of user code as one event (nesting the events inside it) while a
    profile is active; a no-op otherwise.

    Args:
        name (str): the event's name.

    Example::

        >>> with profile() as prof:
        ...     with record_function("data loading"):
        ...         batch = next(loader)
    """

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError(f"record_function: name must be a str, got {type(name).__name__}")
        self.name = name
        self._span = None

    def __enter__(self):
        self._span = profiling.span(self.name, "user")
        self._span.__enter__()
        return self

    def __exit__(self, *exc):
        self._span.__exit__(*exc)
        return False
