"""Event recording behind ``functorch_core.profiler``, shared by the backends and the API.

``recorder`` is None unless a profile is active. Code that reports events checks it
once per call, outside the cached call path: while a profile is active, ``jit`` routes
its calls through the general path and the backend's instrumented runner (for the cpu
backend an alternate step list, ``backends/llvm/profiled.py``); when it is not, the
fast path and the executables' own step lists never look here.

An event is a span of one thread: ``begin`` pushes it on that thread's stack (so the
event below it is its parent), ``end`` pops it and keeps it.
"""

from __future__ import annotations

import threading
import time

recorder = None     # the active Recorder, or None


class Event:
    """One timed span: ``name``, category ``cat``, ``start``/``end`` (perf_counter_ns),
    the thread (``tid``, ``thread_name``), ``args`` (a dict or None), the enclosing
    event of the same thread (``parent``) and, once the profile ends, the events
    directly inside it (``children``)."""

    __slots__ = ("args", "cat", "children", "end", "name", "parent", "start", "thread_name",
                 "tid")

    def __init__(self, name, cat, args, parent, tid):
        self.name, self.cat, self.args, self.parent, self.tid = name, cat, args, parent, tid
        self.start = self.end = 0

    @property
    def duration_ns(self) -> int:
        return self.end - self.start

    @property
    def self_ns(self) -> int:
        """The duration less that of the events nested directly inside (same thread)."""
        return self.duration_ns - sum(c.duration_ns for c in self.children)

    @property
    def stack(self) -> list:
        """The user source lines (``file:line``) of the equations this step runs (a
        profile with ``with_stack``), else ``[]``."""
        return list(self.args.get("stack", ())) if self.args else []

    @property
    def self_cpu_memory_usage(self) -> int:
        """Bytes this event's call holds or allocates itself (``profile_memory``): an
        executable's arena and the results it allocates; 0 for other events."""
        return self.args.get("memory_bytes", 0) if self.args else 0

    @property
    def cpu_memory_usage(self) -> int:
        """:attr:`self_cpu_memory_usage` plus that of the events nested inside."""
        return self.self_cpu_memory_usage + sum(c.cpu_memory_usage for c in self.children)

    def __repr__(self):
        return f"Event({self.name!r}, {self.cat!r}, {self.duration_ns / 1e3:.1f} us)"


class Recorder:
    """The events of one profile, from every thread.

    Flags the instrumented runners read: ``record_shapes``, ``with_stack``,
    ``profile_memory``, ``cuda`` (time each GPU step on the device: the cuda activity)
    and ``cpu`` (host-side events; False records only the GPU steps). ``detail`` packs
    the first two as an index (shapes: 1, stack: 2) into a step's prepared args."""

    def __init__(self, record_shapes: bool = False, with_stack: bool = False,
                 profile_memory: bool = False, cuda: bool = False, cpu: bool = True):
        self.record_shapes, self.with_stack = record_shapes, with_stack
        self.profile_memory, self.cuda, self.cpu = profile_memory, cuda, cpu
        self.detail = int(record_shapes) | 2 * int(with_stack)
        self.events: list = []      # finished events, in the order they ended
        self._local = threading.local()
        self._names: dict = {}      # thread id -> thread name

    def begin(self, name, cat, args=None) -> Event:
        try:
            stack = self._local.stack
        except AttributeError:
            stack = self._local.stack = []
            self._names[threading.get_ident()] = threading.current_thread().name
        ev = Event(name, cat, args, stack[-1] if stack else None, _get_ident())
        stack.append(ev)
        ev.start = _now()
        return ev

    def end(self, ev: Event):
        ev.end = _now()
        stack = self._local.stack
        while stack and stack.pop() is not ev:    # an inner span left by an exception
            pass
        self.events.append(ev)      # one list operation: atomic under the GIL

    def finish(self) -> list:
        """The events, each with its ``children`` and ``thread_name`` filled in (only
        the GPU steps' when ``cpu`` is False)."""
        events = list(self.events)
        if not self.cpu:
            events = [e for e in events if e.cat == "cuda"]
            for e in events:
                e.parent = None
        for ev in events:
            ev.children = []
            ev.thread_name = self._names.get(ev.tid, str(ev.tid))
        for ev in events:
            if ev.parent is not None:
                ev.parent.children.append(ev)
        return events


_now = time.perf_counter_ns
_get_ident = threading.get_ident


class _Span:
    __slots__ = ("args", "cat", "event", "name", "rec")

    def __init__(self, rec, name, cat, args):
        self.rec, self.name, self.cat, self.args, self.event = rec, name, cat, args, None

    def __enter__(self):
        self.event = self.rec.begin(self.name, self.cat, self.args)
        return self

    def __exit__(self, *exc):
        self.rec.end(self.event)
        return False

    def rename(self, name: str):
        """Name the event by what turned out to happen (a cache hit, say)."""
        self.event.name = name


class _NoSpan:
    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def rename(self, name: str):
        pass


_NO_SPAN = _NoSpan()


def span(name: str, cat: str, args: dict | None = None):
    """A context manager recording ``name`` while a profile is active, else a no-op."""
    rec = recorder
    return _NO_SPAN if rec is None else _Span(rec, name, cat, args)


def timed(fn, name: str, cat: str, details: tuple | None = None):
    """``fn`` recording each call as an event on the thread that makes it (a part of a
    step that several threads share), while a profile is active; ``details``: the
    event's args per ``Recorder.detail``."""
    def call(*args):
        rec = recorder
        if rec is None:
            return fn(*args)
        ev = rec.begin(name, cat, details[rec.detail] if details else None)
        try:
            return fn(*args)
        finally:
            rec.end(ev)
    return call
