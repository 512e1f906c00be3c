"""Backends: each renders a graph to code, compiles it and runs it.

``interpreter`` is the NumPy reference implementation of every primitive;
every other backend is tested against it.
"""
