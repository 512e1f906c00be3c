"""LLVM's optimizer and code generator in a child process: IR text in, object code out.

Why: llvmlite leaks each pass builder's instrumentation callbacks (~70 KB per optimized
module, never freed), so a process compiling many distinct signatures grows without
bound; and a long compile in this process cannot be interrupted, since LLVM runs without
returning to Python. The child's leak goes with it when it is replaced, every
:data:`RECYCLE` modules; a Ctrl-C while the parent waits for it raises at once (the
child, which ignores SIGINT, is killed and replaced at the next compile).

The parent (``engine.add_module``) still parses each module, to load the object code the
child returns into its MCJIT engine as it loads a disk-cache hit. The child is used
(``FUNCTORCH_CORE_COMPILE_WORKER``): ``auto`` (the default) once this process has
optimized :data:`IN_PROCESS` modules itself, and for any module of more than
:data:`BIG_MODULE` characters of IR; ``1`` always; ``0`` never. A child that cannot start
or dies leaves the compile to this process (the reason is logged once).

Run as a script (``python compile_worker.py LLVMLITE_PARENT_DIR``) it is the child: it
imports only llvmlite, then answers requests on stdin/stdout until stdin closes.
Request: ``<II`` (header length, text length), a JSON header (``cpu``, ``features``,
``opt``, ``pipeline``: the pass-pipeline options), the IR text. Answer: ``<BI`` (0 for
object code, 1 for an error message, then its length) and the bytes.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import struct
import subprocess
import sys

_REQUEST, _ANSWER = struct.Struct("<II"), struct.Struct("<BI")
IN_PROCESS = 64          # modules this process optimizes itself before ``auto`` uses a child
BIG_MODULE = 1 << 16     # characters of IR (~1 s of O3) from which ``auto`` uses a child
RECYCLE = 256            # modules a child compiles before it is replaced (~18 MB of leak)
log = logging.getLogger("functorch_core.compile")


def _read_exactly(stream, n: int) -> bytes:
    data = stream.read(n)
    if data is None or len(data) != n:
        raise EOFError(f"the compile worker's pipe closed ({len(data or b'')} of {n} bytes)")
    return data


class Worker:
    """One child process; :meth:`compile` sends it a module and waits for its object."""

    def __init__(self, llvmlite_dir: str):
        # -I -S: nothing of the user's environment or site-packages but llvmlite's folder
        self.proc = subprocess.Popen([sys.executable, "-I", "-S", os.path.abspath(__file__),
                                      llvmlite_dir], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.pid, self.compiled = os.getpid(), 0

    def compile(self, text: str, cpu: str, features: str, opt: int, pipeline: dict) -> bytes:
        header = json.dumps({"cpu": cpu, "features": features, "opt": opt,
                             "pipeline": pipeline}).encode()
        body = text.encode()
        stdin, stdout = self.proc.stdin, self.proc.stdout
        stdin.write(_REQUEST.pack(len(header), len(body)) + header + body)
        stdin.flush()
        status, length = _ANSWER.unpack(_read_exactly(stdout, _ANSWER.size))
        payload = _read_exactly(stdout, length)
        self.compiled += 1
        if status:
            raise RuntimeError(f"the compile worker failed: {payload.decode(errors='replace')}")
        return payload

    def close(self):
        if self.pid != os.getpid():
            return      # a forked child's copy: the process is its parent's
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


_state: dict = {"worker": None, "optimized": 0, "broken": None}


def mode() -> str:
    value = os.environ.get("FUNCTORCH_CORE_COMPILE_WORKER", "auto").strip().lower()
    return {"1": "always", "true": "always", "0": "never", "false": "never"}.get(value, "auto")


def wanted(text: str) -> bool:
    """Whether the next optimized module ``text`` goes to a child (counts the others)."""
    m = mode()
    use = m == "always" or (m == "auto" and (_state["optimized"] >= IN_PROCESS
                                             or len(text) > BIG_MODULE))
    if use and _state["broken"] is None:
        return True
    _state["optimized"] += 1
    return False


def compile_object(text: str, cpu: str, features: str, opt: int, pipeline: dict,
                   llvmlite_dir: str):
    """The object code of ``text`` optimized by ``pipeline`` in a child (which finds
    llvmlite in ``llvmlite_dir``); None when no child can do it (this process compiles
    instead). A KeyboardInterrupt while waiting kills the
    child and propagates. Call with the engine's lock held."""
    worker = _state["worker"]
    try:
        if worker is None or worker.compiled >= RECYCLE or worker.proc.poll() is not None:
            if worker is not None:
                worker.close()
            worker = _state["worker"] = Worker(llvmlite_dir)
        return worker.compile(text, cpu, features, opt, pipeline)
    except BaseException as e:
        _state["worker"] = None
        if worker is not None:
            worker.close()
        if not isinstance(e, Exception):
            raise       # KeyboardInterrupt, SystemExit: the module is not compiled at all
        if _state["broken"] is None:
            _state["broken"] = f"{type(e).__name__}: {e}"
            log.warning("compiling in this process from now on: %s", _state["broken"])
        return None


def reset_after_fork():
    """A forked child has no worker of its own (its parent's stays the parent's)."""
    _state["worker"] = None


def close():
    worker, _state["worker"] = _state["worker"], None
    if worker is not None:
        worker.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=reset_after_fork)


def _serve():       # the child
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # the parent decides what Ctrl-C stops
    sys.path.insert(0, sys.argv[1])
    from llvmlite import binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    machines = {}
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = stdin.read(_REQUEST.size)
        if len(head) < _REQUEST.size:
            return
        n_header, n_text = _REQUEST.unpack(head)
        request = json.loads(_read_exactly(stdin, n_header))
        text = _read_exactly(stdin, n_text).decode()
        try:
            key = (request["cpu"], request["features"], request["opt"])
            if key not in machines:
                machines[key] = llvm.Target.from_default_triple().create_target_machine(
                    cpu=key[0], features=key[1], opt=key[2], jit=True)
            tm = machines[key]
            context = llvm.create_context()
            llmod = llvm.parse_assembly(text, context=context)
            llmod.triple, llmod.data_layout = tm.triple, str(tm.target_data)
            options = dict(request["pipeline"])
            pto = llvm.create_pipeline_tuning_options(speed_level=options["speed_level"])
            for option, value in options.items():
                setattr(pto, option, value)
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().run(llmod, pb)
            answer, status = tm.emit_object(llmod), 0
            del llmod
        except Exception as e:      # any failure goes back as a message
            answer, status = f"{type(e).__name__}: {e}".encode(), 1
        stdout.write(_ANSWER.pack(status, len(answer)) + answer)
        stdout.flush()


if __name__ == "__main__":
    _serve()
