"""Checks that cached object code is an object file MCJIT can load without aborting.

LLVM reports a malformed object (a bad ELF class, a section table past the end of the
file, a relocation type it does not implement, an unresolvable symbol) with
``report_fatal_error``, which ends the process (signal 6). The disk cache's checksum only
proves that the bytes are the ones written; this module checks, in Python and before LLVM
sees them, what LLVM's loader would otherwise abort on:

- the ELF header: magic, 64-bit little-endian class (a big-endian host always compiles
  again), a relocatable
  object for this machine, header and section-entry sizes;
- every section: inside the file, its links and names inside the tables they index;
- symbol tables: entry sizes, names inside their string table, section indices;
- relocations: entry sizes, symbol indices inside their symbol table, and on x86-64 only
  the relocation types LLVM's ELF loader implements;
- symbols: each function the caller will look up is defined, and every undefined symbol
  resolves in this process (``resolves``).

Only little-endian ELF (Linux, the BSDs) is understood: elsewhere :func:`loadable` answers
False and the cache's objects are compiled again rather than trusted. The machine code itself is
not checked: entries are machine code that runs in the process (see ``cache.py``).
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable, Iterable

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
_RELA_SIZE, _REL_SIZE = 24, 16
_SHT_SYMTAB, _SHT_STRTAB, _SHT_RELA, _SHT_NOBITS, _SHT_REL = 2, 3, 4, 8, 9
_SHN_LORESERVE = 0xFF00
_ET_REL = 1
# e_machine by the machine names platform.machine() and LLVM's triples use
MACHINES = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183, "ppc64le": 21,
            "s390x": 22, "riscv64": 243}
# relocation types RuntimeDyldELF implements for x86-64 (any other is a fatal error)
X86_64_RELOCATIONS = frozenset({0, 1, 2, 4, 9, 10, 11, 24, 25, 26, 41, 42})


def loadable(obj: bytes, triple: str, names: Iterable[str],
             resolves: Callable[[str], bool]) -> bool:
    """True when ``obj`` is an ELF relocatable object for ``triple``'s machine that defines
    every function in ``names`` and whose undefined symbols all satisfy ``resolves``;
    never raises.

    Example::

        >>> loadable(b"\\x7fELF" + bytes(60), "x86_64-unknown-linux-gnu", [], bool)
        False
    """
    try:
        return _loadable(memoryview(obj), triple, set(names), resolves)
    except (struct.error, ValueError, IndexError, UnicodeDecodeError):
        return False


def _loadable(obj, triple, names, resolves) -> bool:
    if len(obj) < _EHDR.size:
        return False
    (ident, e_type, machine, version, _entry, _phoff, shoff, _flags, ehsize, _phentsize,
     _phnum, shentsize, shnum, shstrndx) = _EHDR.unpack_from(obj)
    arch = triple.split("-", 1)[0]
    if (sys.byteorder != "little" or ident[:4] != b"\x7fELF" or ident[4] != 2
            or ident[5] != 1 or ident[6] != 1 or version != 1 or e_type != _ET_REL
            or machine != MACHINES.get(arch) or ehsize != _EHDR.size
            or shentsize != _SHDR.size or shnum == 0 or shstrndx >= shnum
            or shoff + shnum * _SHDR.size > len(obj)):
        return False
    sections = [_SHDR.unpack_from(obj, shoff + i * _SHDR.size) for i in range(shnum)]
    for _name, kind, _f, _a, offset, size, link, _info, _al, _es in sections:
        if kind != _SHT_NOBITS and offset + size > len(obj):
            return False
        if link >= shnum:
            return False
    if not _name_inside(sections[shstrndx], [s[0] for s in sections]):
        return False
    defined, undefined, counts = set(), set(), {}
    for i, s in enumerate(sections):
        if s[1] == _SHT_SYMTAB:
            got = _symbols(obj, sections, s, defined, undefined)
            if got is None:
                return False
            counts[i] = got
    for s in sections:
        if s[1] in (_SHT_RELA, _SHT_REL) and not _relocations_ok(s, counts, shnum, arch, obj):
            return False
    return names <= defined and all(resolves(n) for n in undefined - defined)


def _name_inside(strtab, offsets) -> bool:
    return strtab[1] == _SHT_STRTAB and all(o < strtab[5] for o in offsets)


def _symbols(obj, sections, symtab, defined, undefined) -> int | None:
    """Number of symbols of ``symtab`` (adding names to ``defined``/``undefined``), or None
    when it is malformed."""
    _n, _k, _f, _a, offset, size, link, _i, _al, entsize = symtab
    strtab = sections[link]
    if entsize != _SYM.size or size % _SYM.size or strtab[1] != _SHT_STRTAB:
        return None
    shnum = len(sections)
    for j in range(size // _SYM.size):
        name, _info, _other, shndx, _value, _size = _SYM.unpack_from(obj, offset + j * _SYM.size)
        if name >= strtab[5] or (shnum <= shndx < _SHN_LORESERVE):
            return None
        if name:
            start = strtab[4] + name
            end = bytes(obj[start:strtab[4] + strtab[5]]).find(b"\0")
            if end < 0:
                return None
            text = bytes(obj[start:start + end]).decode()
            (undefined if shndx == 0 else defined).add(text)
    return size // _SYM.size


def _relocations_ok(section, counts, shnum, arch, obj) -> bool:
    _n, kind, _f, _a, offset, size, link, info, _al, entsize = section
    width = _RELA_SIZE if kind == _SHT_RELA else _REL_SIZE
    if entsize != width or size % width or link not in counts or info >= shnum:
        return False
    for j in range(size // width):
        (r_info,) = struct.unpack_from("<Q", obj, offset + j * width + 8)
        if (r_info >> 32) >= counts[link]:
            return False
        if arch == "x86_64" and (r_info & 0xFFFFFFFF) not in X86_64_RELOCATIONS:
            return False
    return True
