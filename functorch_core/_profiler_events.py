"""The profiler's summaries: events averaged per name (:class:`FunctionEventAvg`), their
table (:class:`EventList`) and the Chrome trace file, as ``torch.profiler`` shows them."""

from __future__ import annotations

import gzip
import json
import os

SORT_KEYS = ("self_cpu_time_total", "cpu_time_total", "cpu_time", "self_cpu_time", "count",
             "cpu_memory_usage", "self_cpu_memory_usage")


class FunctionEventAvg:
    """The events of one name (and input shapes, and top stack lines, when grouped by
    them), summed.

    Attributes:
        key: the event name.
        count: how many events.
        cpu_time_total: their summed duration in microseconds.
        self_cpu_time_total: the same, less the events nested inside them.
        cpu_time: the average duration (``cpu_time_total / count``).
        self_cpu_time: the average self time.
        cpu_memory_usage: bytes their calls held or allocated, nested events included
            (``profile(profile_memory=True)``; else 0).
        self_cpu_memory_usage: the same, less the nested events'.
        input_shapes: the recorded input shapes when grouped by them, else None.
        stack: the top source lines (``file:line``) when grouped by them, else ``[]``.
    """

    def __init__(self, key, input_shapes=None, stack=()):
        self.key, self.input_shapes, self.stack = key, input_shapes, list(stack)
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0

    def add(self, ev):
        self.count += 1
        self.cpu_time_total += ev.duration_ns / 1e3
        self.self_cpu_time_total += ev.self_ns / 1e3
        self.cpu_memory_usage += ev.cpu_memory_usage
        self.self_cpu_memory_usage += ev.self_cpu_memory_usage

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / max(self.count, 1)

    @property
    def self_cpu_time(self) -> float:
        return self.self_cpu_time_total / max(self.count, 1)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key!r} count={self.count} "
                f"self_cpu_time_total={self.self_cpu_time_total:.1f}us "
                f"cpu_time_total={self.cpu_time_total:.1f}us "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


def averages(events, group_by_input_shape: bool, group_by_stack_n: int) -> list:
    """The :class:`FunctionEventAvg` rows of ``events``, in the order the keys first
    appear."""
    rows: dict = {}
    for ev in events:
        shapes = None
        if group_by_input_shape and ev.args:
            shapes = ev.args.get("input_shapes", ev.args.get("shape"))
        stack = tuple(ev.stack[:group_by_stack_n]) if group_by_stack_n else ()
        key = (ev.name, repr(shapes), stack)
        row = rows.get(key)
        if row is None:
            row = rows[key] = FunctionEventAvg(ev.name, shapes if group_by_input_shape
                                               else None, stack)
        row.add(ev)
    return list(rows.values())


def _us(t: float) -> str:
    if t >= 1e6:
        return f"{t / 1e6:.3f}s"
    if t >= 1e3:
        return f"{t / 1e3:.3f}ms"
    return f"{t:.3f}us"


def _bytes(n: int) -> str:
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} b"


class EventList(list):
    """A list of :class:`FunctionEventAvg` (what ``key_averages`` returns)."""

    def __init__(self, rows=(), profile_memory: bool = False, stack_n: int = 0):
        super().__init__(rows)
        self.profile_memory, self.stack_n = profile_memory, stack_n

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_name_column_width: int = 55) -> str:
        """The rows as a text table.

        Args:
            sort_by (str, default ``None``): ``"self_cpu_time_total"``,
                ``"cpu_time_total"``, ``"cpu_time"`` (average), ``"self_cpu_time"``
                (average), ``"count"``, ``"cpu_memory_usage"`` or
                ``"self_cpu_memory_usage"``, largest first; ``None`` keeps the order in
                which the names first ended.
            row_limit (int, default 100): at most this many rows (``-1``: all).
            max_name_column_width (int, default 55): longer names are cut.

        Returns:
            The table: name, self CPU time (total and % of all self time), CPU total
            time (and %), average CPU time, the memory columns ``CPU Mem`` and
            ``Self CPU Mem`` (a ``profile_memory`` profile), number of calls, input
            shapes (grouped by them) and ``Source Location``, one line per stack entry
            (grouped by ``group_by_stack_n``), and a footer with the self time total.

        Example::

            >>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=5))
        """
        rows = list(self)
        if sort_by is not None:
            if sort_by not in SORT_KEYS:
                raise ValueError(f"table: sort_by must be one of {SORT_KEYS}, got {sort_by!r}")
            rows.sort(key=lambda r: getattr(r, sort_by), reverse=True)
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        total_self = sum(r.self_cpu_time_total for r in self) or 1.0
        shapes = any(r.input_shapes is not None for r in self)
        width = max([len("Name")] + [min(len(r.key), max_name_column_width) for r in rows])
        head = ["Name".ljust(width), "Self CPU %", "Self CPU", "CPU total %", "CPU total",
                "CPU time avg"] + (["CPU Mem", "Self CPU Mem"] if self.profile_memory else [])
        head += ["# of Calls"] + (["Input Shapes"] if shapes else []) + \
            (["Source Location"] if self.stack_n else [])
        left = {0} | {i for i, h in enumerate(head) if h in ("Input Shapes", "Source Location")}
        widths = [len(h) if i else width for i, h in enumerate(head)]
        widths = [w if i in left else max(w, 12) for i, w in enumerate(widths)]
        line = "-" * (sum(widths) + 2 * (len(widths) - 1))

        def fmt(cells):
            return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                             for i, (c, w) in enumerate(zip(cells, widths, strict=True)))
        out = [line, fmt(head), line]
        for r in rows:
            name = r.key if len(r.key) <= max_name_column_width else \
                r.key[:max_name_column_width - 3] + "..."
            cells = [name, f"{100 * r.self_cpu_time_total / total_self:.2f}%",
                     _us(r.self_cpu_time_total),
                     f"{100 * r.cpu_time_total / total_self:.2f}%", _us(r.cpu_time_total),
                     _us(r.cpu_time)]
            if self.profile_memory:
                cells += [_bytes(r.cpu_memory_usage), _bytes(r.self_cpu_memory_usage)]
            cells.append(str(r.count))
            if shapes:
                cells.append(str(r.input_shapes or ""))
            if self.stack_n:
                cells.append(r.stack[0] if r.stack else "")
            out.append(fmt(cells))
            for more in r.stack[1:]:
                out.append(fmt([""] * (len(cells) - 1) + [more]))
        out += [line, f"Self CPU time total: {_us(sum(r.self_cpu_time_total for r in self))}"]
        return "\n".join(out)


def write_chrome_trace(events, path, rank=None) -> None:
    """``events`` as Chrome trace-event JSON at ``path`` (gzip-compressed when it ends in
    ``.gz``). With a ``rank``, the process is named after it and times are on the machine's
    monotonic clock (no offset), so the ranks' files line up."""
    t0 = events[0].start if events and rank is None else 0
    pid = os.getpid()
    trace, threads = [], {}
    if rank is not None:
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
    text = json.dumps({"traceEvents": trace, "displayTimeUnit": "ms"})
    if os.fspath(path).endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)
