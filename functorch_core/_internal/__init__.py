"""Private helpers that several of functorch_core's subpackages share: tracing user
functions (``tracing``, ``trace_errors``, ``random_guard``), the random-key scope of a
trace (``random_scope``), and numerics that give the same bits on every backend
(``horner``, ``portable_log``, ``erfinv``). Nothing here is public API."""
