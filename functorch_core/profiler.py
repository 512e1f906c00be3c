"""A profiler for jit calls, compilation, transforms and native kernels, shaped like
``torch.profiler`` (PyTorch 1.9's API).

Example::

    >>> import functorch_core as fc
    >>> f = fc.jit(lambda x: np.tanh(x @ x.T).sum(axis=1))
    >>> with fc.profiler.profile() as prof:
    ...     with fc.profiler.record_function("two calls"):
    ...         f(x)
    ...         f(x)
    >>> print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    >>> prof.export_chrome_trace("trace.json")     # open in Perfetto or chrome://tracing

    >>> with fc.profiler.profile(
    ...         schedule=fc.profiler.schedule(wait=1, warmup=1, active=2),
    ...         on_trace_ready=fc.profiler.tensorboard_trace_handler("./log"),
    ...         with_stack=True, profile_memory=True) as prof:
    ...     for batch in loader:
    ...         train_step(batch)
    ...         prof.step()

Nothing is recorded, and the jit fast path is untouched, unless a profile is recording
(or warming up). While one is, every jit call takes the general path and runs the
executable's instrumented twin (``backends/llvm/profiled.py``), so per-call times under
the profiler include that overhead (a few microseconds per call and per step).
"""

from __future__ import annotations

import enum
import os
import socket
import time
import warnings

from functorch_core.backends import mpi, profiling

from ._profiler_events import EventList, FunctionEventAvg, averages, write_chrome_trace
from .api import drop_fast_paths

__all__ = ["EventList", "FunctionEventAvg", "ProfilerAction", "ProfilerActivity", "profile",
           "record_function", "schedule", "tensorboard_trace_handler"]

_ACTIVE = []        # the profile inside its ``with`` block, if any


class ProfilerActivity(enum.Enum):
    """What a :class:`profile` records, as ``torch.profiler.ProfilerActivity``.

    ``CPU``: the host-side events (every event functorch_core records). ``CUDA``: each
    step of a ``jit(f, backend='cuda')`` executable as an event of category ``"cuda"``
    named ``cuda kernel[...]`` (or ``cuda dot_general``, ``cuda <primitive>``), timed
    until the device has finished it (the device is synchronized after each step while
    the activity is recorded). Where the cuda backend does not run, ``CUDA`` is accepted
    and records nothing.
    """

    CPU = "cpu"
    CUDA = "cuda"


class ProfilerAction(enum.Enum):
    """What a :func:`schedule` asks of a step, as ``torch.profiler.ProfilerAction``:
    ``NONE`` (not profiled), ``WARMUP`` (profiled, events dropped), ``RECORD`` (events
    kept) and ``RECORD_AND_SAVE`` (the last step of an active window: its events are
    handed to ``on_trace_ready`` when the step ends)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0):
    """A profiling schedule, as ``torch.profiler.schedule``: after ``skip_first`` steps,
    cycles of ``wait`` idle steps, ``warmup`` warm-up steps and ``active`` recorded
    steps (the last one ``RECORD_AND_SAVE``), ``repeat`` times (0: without end).

    Args:
        wait (int): idle steps at the start of each cycle (>= 0).
        warmup (int): warm-up steps after them (>= 0): profiled, their events dropped.
        active (int): recorded steps (>= 1).
        repeat (int, default 0): how many cycles; 0 repeats until the profile ends.
        skip_first (int, default 0): idle steps before the first cycle.

    Returns:
        ``fn(step) -> ProfilerAction`` for step numbers ``0, 1, ...``.

    Example::

        >>> sched = schedule(wait=1, warmup=1, active=2, repeat=1)
        >>> [sched(i).name for i in range(5)]
        ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """
    given = {"wait": wait, "warmup": warmup, "active": active, "repeat": repeat,
             "skip_first": skip_first}
    for name, v in given.items():
        if type(v) is not int or v < (1 if name == "active" else 0):
            raise ValueError(f"schedule({name}={v!r}): {name} must be an int >= "
                             f"{1 if name == 'active' else 0}")
    cycle = wait + warmup + active

    def schedule_fn(step: int) -> ProfilerAction:
        if type(step) is not int or step < 0:
            raise ValueError(f"schedule: step must be an int >= 0, got {step!r}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        k = step % cycle
        if k < wait:
            return ProfilerAction.NONE
        if k < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if k < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


def _record_always(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name: str | None = None,
                              use_gzip: bool = False):
    """An ``on_trace_ready`` that writes each active window as a Chrome trace file in
    ``dir_name`` (made if missing), named as torch's:
    ``{worker_name}.{timestamp_ms}.pt.trace.json`` (``.gz`` added with ``use_gzip``);
    a name already taken gets the next millisecond.

    Args:
        dir_name (str or os.PathLike): the directory of the trace files.
        worker_name (str or None, default ``None``): the files' prefix; ``None`` means
            ``{hostname}_{pid}``.
        use_gzip (bool, default ``False``): write gzip-compressed files.

    Example::

        >>> with profile(schedule=schedule(wait=0, warmup=1, active=1),
        ...              on_trace_ready=tensorboard_trace_handler("./log")) as prof:
        ...     for _ in range(4):
        ...         f(x)
        ...         prof.step()
    """
    dir_name = os.fspath(dir_name)

    def handler_fn(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        stamp = int(time.time() * 1000)
        while True:
            name = f"{worker}.{stamp}.pt.trace.json" + (".gz" if use_gzip else "")
            path = os.path.join(dir_name, name)
            if not os.path.exists(path):
                break
            stamp += 1
        prof.export_chrome_trace(path)
    return handler_fn


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
    return frozenset(acts) or frozenset(ProfilerActivity)      # [] means all, as torch


def _check_flag(name, value) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"profile({name}=...): pass True or False, got {value!r}")
    return value


class profile:
    """Record what functorch_core does inside a ``with`` block, as
    ``torch.profiler.profile``.

    Events: each ``jit`` call (``jit(f)``); on a new signature its trace, functionalize
    and simplify passes and the backend compile (for the cpu backend: ``partition``,
    ``llvm`` and, per LLVM module, ``llvm: optimize+compile``, ``llvm: disk cache
    hit``, or ``llvm: compile worker`` then ``llvm: load``; a module this process already
    holds records nothing); each run of an
    executable (``run(cpu)``, ``run(cuda)``, ``run(interpreter)``) and inside it each
    step of a cpu executable (``kernel[mul+add+tanh]`` named by its fused primitives,
    ``dot_general (blas)``, ``conv_general_dilated (blas)`` or ``(native)``, ``sort``,
    ``loop[scan]``, ``fallback[prim]`` for an equation the interpreter runs), with a
    ``... part`` event on each thread a split kernel or sort runs on; the building of
    a transformed graph (``transform grad(f)``) and each eager transform call
    (``grad(f)``); :func:`record_function` ranges; and, with a ``schedule``, one
    ``ProfilerStep#N`` event per recorded step. Events nest per thread.

    A graph whose kernels are all small runs as one native call and is recorded as one
    ``native entry`` event (its kernels listed in the event's args); the body of a
    control-flow loop runs inside its ``loop[...]`` event without events of its own.

    Args:
        activities (list of :class:`ProfilerActivity` or None, default ``None``): as
            torch's; ``None`` means ``[ProfilerActivity.CPU]``, ``[]`` means both.
            ``CPU`` records every event above; ``CUDA`` the steps of cuda executables,
            timed on the device (see :class:`ProfilerActivity`); ``[CUDA]`` alone keeps
            only those.
        schedule (callable or None, default ``None``): ``fn(step) -> ProfilerAction``
            (see :func:`schedule`), asked at the start and after each :meth:`step`;
            events are kept only in ``RECORD`` and ``RECORD_AND_SAVE`` steps. ``None``
            records the whole block as one window.
        on_trace_ready (callable or None, default ``None``): ``fn(prof)``, called at the
            end of each active window (after its ``RECORD_AND_SAVE`` step, and when the
            block ends inside a window) while :meth:`events` holds that window's events;
            e.g. :func:`tensorboard_trace_handler`.
        record_shapes (bool, default ``False``): record the shapes and dtypes of each
            jit call's arguments and of each kernel's iteration space (see
            ``key_averages(group_by_input_shape=True)``).
        profile_memory (bool, default ``False``): give each ``run(cpu)`` event the
            executable's arena size (``arena_bytes``, intermediates, laid out by the
            buffer plan), its peak of live intermediates (``arena_peak_bytes``) and the
            bytes of the results the call allocated (``result_bytes``); the event's
            ``self_cpu_memory_usage`` is arena plus results, and ``cpu_memory_usage``
            adds up the nested events' (columns ``CPU Mem``, ``Self CPU Mem``).
        with_stack (bool, default ``False``): give each step event the user source
            lines (``file:line``) of the equations planned into it, every equation fused
            into a kernel included (``event.stack``, ``key_averages(group_by_stack_n=)``).
            The lines are those of the graph first compiled in this process with the
            executable's structure.
        enabled (bool, default ``True``): ``False`` makes the block record nothing.

    Only one profile may be active at a time (in any thread).

    Example::

        >>> with profile(record_shapes=True) as prof:
        ...     f(x)
        >>> prof.key_averages(group_by_input_shape=True).table(row_limit=5)
        >>> with profile(schedule=schedule(wait=1, warmup=1, active=3),
        ...              on_trace_ready=lambda p: print(p.key_averages().table())) as prof:
        ...     for _ in range(5):
        ...         f(x)
        ...         prof.step()
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, enabled: bool = True):
        self.activities = _check_activities(activities)
        for name, fn in (("schedule", schedule), ("on_trace_ready", on_trace_ready)):
            if fn is not None and not callable(fn):
                raise TypeError(f"profile({name}=...): pass a callable or None, got {fn!r}")
        self.schedule, self.on_trace_ready = schedule, on_trace_ready
        self.record_shapes = _check_flag("record_shapes", record_shapes)
        self.profile_memory = _check_flag("profile_memory", profile_memory)
        self.with_stack = _check_flag("with_stack", with_stack)
        self.enabled = _check_flag("enabled", enabled)
        self.step_num = 0
        self.current_action = None
        self._recorder = self._step_span = None
        self._events: list = []

    def __enter__(self):
        if not self.enabled:
            return self
        if _ACTIVE or profiling.recorder is not None:
            raise RuntimeError("functorch_core.profiler.profile: another profile is already "
                               "active; nest record_function ranges instead")
        action = self._action(0)
        _ACTIVE.append(self)
        self.step_num, self.current_action = 0, action
        self._begin(None, action)
        return self

    def __exit__(self, *exc):
        if self not in _ACTIVE:
            return False
        try:
            self._end_step()
            action = self.current_action
            if action in _RECORDING:
                self._end_window(save=True)     # torch: the open window is saved
        finally:
            self._uninstall()
            _ACTIVE.remove(self)
        return False

    def step(self) -> None:
        """End the current step and start the next one (``step_num`` + 1), doing what
        the schedule asks: at the end of a ``RECORD_AND_SAVE`` step the window's events
        are kept and ``on_trace_ready`` is called. Outside the ``with`` block, or
        disabled, it does nothing.

        Example::

            >>> for batch in loader:
            ...     train_step(batch)
            ...     prof.step()
        """
        if self not in _ACTIVE:
            return
        self._end_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self._action(self.step_num)
        self._begin(prev, self.current_action)

    def _action(self, step):
        fn = self.schedule or _record_always
        action = fn(step)
        if not isinstance(action, ProfilerAction):
            raise TypeError(f"profile(schedule=...): the schedule returned {action!r} for "
                            f"step {step}; it must return a ProfilerAction")
        return action

    def _begin(self, prev, action):
        """The transition from ``prev`` to ``action``, as torch's profiler makes it."""
        if prev is ProfilerAction.RECORD_AND_SAVE:
            self._end_window(save=True)
        elif prev is ProfilerAction.RECORD and action not in _RECORDING:
            warnings.warn(f"profile: incorrect schedule: RECORD followed by {action.name} "
                          f"at step {self.step_num}; the window's events are kept, "
                          "on_trace_ready is not called", UserWarning, stacklevel=3)
            self._end_window(save=False)
        elif prev is ProfilerAction.WARMUP and action is ProfilerAction.NONE:
            warnings.warn(f"profile: incorrect schedule: WARMUP followed by NONE at step "
                          f"{self.step_num}; nothing was recorded", UserWarning, stacklevel=3)
        if action is ProfilerAction.NONE:
            self._uninstall()
        elif action is ProfilerAction.WARMUP and prev is not ProfilerAction.WARMUP:
            self._install()         # events of warm-up steps are dropped
        elif action in _RECORDING and (self._recorder is None or
                                       prev is ProfilerAction.WARMUP):
            self._install()
        if action in _RECORDING and self.schedule is not None:
            self._step_span = profiling.span(f"ProfilerStep#{self.step_num}", "user")
            self._step_span.__enter__()

    def _install(self):
        acts = self.activities
        self._recorder = profiling.Recorder(
            self.record_shapes, self.with_stack, self.profile_memory,
            cuda=ProfilerActivity.CUDA in acts, cpu=ProfilerActivity.CPU in acts)
        fresh = profiling.recorder is None
        profiling.recorder = self._recorder
        if fresh:
            drop_fast_paths()       # every jit call now takes the general, profiled path

    def _uninstall(self):
        profiling.recorder = self._recorder = None

    def _end_step(self):
        if self._step_span is not None:
            self._step_span.__exit__(None, None, None)
            self._step_span = None

    def _end_window(self, save: bool):
        rec = self._recorder
        self._uninstall()
        self._events = rec.finish() if rec is not None else []
        if save and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def events(self) -> list:
        """The events of the last window (the whole block without a schedule), in the
        order they started: each has ``name``, ``cat``, ``start``/``end``
        (``time.perf_counter_ns``), ``duration_ns``, ``self_ns``, ``tid``,
        ``thread_name``, ``args``, ``parent`` and ``children`` (the tree, per thread),
        ``stack`` (``with_stack``) and ``cpu_memory_usage`` / ``self_cpu_memory_usage``
        (``profile_memory``)."""
        return sorted(self._events, key=lambda e: e.start)

    def key_averages(self, group_by_input_shape: bool = False,
                     group_by_stack_n: int = 0) -> EventList:
        """The events summed per name (and per recorded input shapes, and per top stack
        lines), as an :class:`EventList` whose ``table()`` prints them.

        Args:
            group_by_input_shape (bool, default ``False``): one row per (name, input
                shapes); needs ``profile(record_shapes=True)``.
            group_by_stack_n (int, default 0): one row per (name, first ``n`` lines of
                the event's stack) and a ``Source Location`` column; needs
                ``profile(with_stack=True)``. 0: not grouped by stack.

        Example::

            >>> prof.key_averages(group_by_stack_n=2).table(sort_by="self_cpu_time_total")
        """
        if type(group_by_stack_n) is not int or group_by_stack_n < 0:
            raise ValueError("key_averages(group_by_stack_n=...): pass an int >= 0, got "
                             f"{group_by_stack_n!r}")
        if group_by_stack_n and not self.with_stack:
            raise ValueError(f"key_averages(group_by_stack_n={group_by_stack_n}): the "
                             "profile recorded no stacks; use profile(with_stack=True)")
        return EventList(averages(self.events(), group_by_input_shape, group_by_stack_n),
                         self.profile_memory, group_by_stack_n)

    def export_chrome_trace(self, path) -> None:
        """Write the events of the last window as Chrome trace-event JSON (complete
        ``"X"`` events in microseconds, one track per thread, each event's args kept),
        loadable in Perfetto or chrome://tracing; gzip-compressed when ``path`` ends in
        ``.gz``.

        In a distributed job, give every rank the same directory: ``path`` naming a
        directory writes ``trace.rank<R>.json`` there (``R`` the rank in
        ``functorch_core.distributed``'s world, 0 before ``init()``), with the rank as the
        process's name and times on the machine's monotonic clock, so that the ranks of
        one machine line up when the files are opened together.

        Args:
            path (str or os.PathLike): the file to write, or an existing directory.

        Example::

            >>> prof.export_chrome_trace("trace.json")
            >>> prof.export_chrome_trace("traces/")   # traces/trace.rank0.json, ...rank1...
        """
        if os.path.isdir(path):
            rank = mpi.world().rank if mpi.is_initialized() else 0
            write_chrome_trace(self.events(), os.path.join(path, f"trace.rank{rank}.json"), rank)
        else:
            write_chrome_trace(self.events(), path)


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
