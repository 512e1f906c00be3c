"""Which names a shared library's entry point may take (``aot.compile_library``).

The library exports ``NAME`` and ``NAME_init``, ``NAME_num_inputs``... and calls libc,
libm and libdl functions (``malloc``, ``memcpy``, ``tanh``...). A name that is not a C
identifier, is a C keyword or a reserved identifier, or collides with a symbol this
process already has (libc, libm, libdl, Python's own) would fail to link, fail in the
header, or silently interpose a system function in every program that loads the
library: :func:`check_library_name` refuses it with the reason.
"""

from __future__ import annotations

import ctypes

MAX_LENGTH = 128    # the object file is named after it; keeps every derived name short

# C23's keywords (C89 to C23) and the names the generated code declares itself
C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while alignas alignof bool constexpr false nullptr
static_assert thread_local true typeof typeof_unqual
""".split())
DECLARED = frozenset({"malloc", "free", "memcpy", "dlopen", "dlsym", "main"})
SUFFIXES = ("", "_init", "_num_inputs", "_num_outputs", "_input_rank", "_output_rank",
            "_input_shape", "_output_shape", "_input_dtype", "_output_dtype")


def check_library_name(name, call: str = "compile_library") -> None:
    """Raise ValueError unless ``name`` can name a library's entry point.

    Example::

        >>> check_library_name("mlp")
        >>> check_library_name("malloc")
        Traceback (most recent call last):
        ValueError: compile_library: name 'malloc' is a C library function...
    """
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
        raise ValueError(f"{call}: name {name!r} is not a C identifier (ASCII letters, "
                         "digits and underscores, not starting with a digit)")
    if len(name) > MAX_LENGTH:
        raise ValueError(f"{call}: name {name[:20]!r}... has {len(name)} characters; at "
                         f"most {MAX_LENGTH}")
    if name in C_KEYWORDS:
        raise ValueError(f"{call}: name {name!r} is a C keyword; the header could not "
                         "declare it. Choose another name, e.g. 'model_' + name")
    if name.startswith("_"):
        raise ValueError(f"{call}: name {name!r} starts with an underscore: such names "
                         "are reserved for the C implementation; start it with a letter")
    process = ctypes.CDLL(None)
    for symbol in (name + s for s in SUFFIXES):
        if symbol in DECLARED or hasattr(process, symbol):
            what = "name" if symbol == name else f"name {name!r} gives the symbol"
            raise ValueError(
                f"{call}: {what} {symbol!r} is a C library function (or another symbol "
                "this process already has): the library calls or would interpose it. "
                "Choose a name of your own, e.g. 'model_' + name")
