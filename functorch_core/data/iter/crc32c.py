"""CRC-32C (Castagnoli), and TFRecord's masked form of it, with NumPy and no dependency.

A short buffer goes through the byte-at-a-time table loop. A long one is cut into ``K``
equal chunks whose CRCs (from a zero register) are computed side by side, one NumPy step per
byte position; they are then chained with the linearity of CRCs: the register after a
chunk of ``L`` bytes is ``shift_L(register before) ^ crc_0(chunk)``, and ``shift_L`` is a
32x32 matrix over GF(2), found by running ``L`` zero bytes through the 32 unit registers.
"""

from __future__ import annotations

import numpy as np

__all__ = ["crc32c", "masked_crc32c"]

_POLY = 0x82F63B78  # the Castagnoli polynomial, bit-reflected


def _table() -> np.ndarray:
    t = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        t = np.where(t & 1, (t >> 1) ^ np.uint32(_POLY), t >> 1).astype(np.uint32)
    return t


_TABLE = _table()
_TABLE_LIST = _TABLE.tolist()
_SHORT = 4096  # below this many bytes the plain loop is as fast


def _run(register: int, data) -> int:
    table = _TABLE_LIST
    for b in data:
        register = table[(register ^ b) & 0xFF] ^ (register >> 8)
    return register


def _columns(registers: np.ndarray, chunks: np.ndarray) -> np.ndarray:
    """Run each row of ``chunks`` (uint8, shape (K, L)) through its own register."""
    for j in range(chunks.shape[1]):
        registers = _TABLE[(registers ^ chunks[:, j]) & 0xFF] ^ (registers >> np.uint32(8))
    return registers


def _apply(matrix: list[int], x: int) -> int:
    out = 0
    for bit, column in enumerate(matrix):
        if x >> bit & 1:
            out ^= column
    return out


def _raw(register: int, data: bytes) -> int:
    n = len(data)
    if n < _SHORT:
        return _run(register, data)
    width = int(np.sqrt(n))
    count = n // width
    body = np.frombuffer(data, dtype=np.uint8, count=count * width).reshape(count, width)
    parts = _columns(np.zeros(count, dtype=np.uint32), body).tolist()
    units = np.left_shift(np.uint32(1), np.arange(32, dtype=np.uint32))
    shift = _columns(units, np.zeros((32, width), dtype=np.uint8)).tolist()
    for part in parts:
        register = _apply(shift, register) ^ part
    return _run(register, memoryview(data)[count * width:])


def crc32c(data, value: int = 0) -> int:
    """The CRC-32C of ``data``, continuing from the CRC ``value`` of what came before.

    Args:
        data (bytes-like): the bytes.
        value (int): the CRC of the preceding bytes. Default: ``0`` (none).

    Example::

        >>> hex(crc32c(b"123456789"))
        '0xe3069283'
        >>> crc32c(b"6789", crc32c(b"12345")) == crc32c(b"123456789")
        True
    """
    data = bytes(data) if not isinstance(data, bytes) else data
    return _raw(value ^ 0xFFFFFFFF, data) ^ 0xFFFFFFFF


def masked_crc32c(data) -> int:
    """TFRecord's masked CRC: the CRC-32C rotated right by 15 bits plus ``0xa282ead8``.

    Args:
        data (bytes-like): the bytes.

    Example::

        >>> hex(masked_crc32c(b""))
        '0xa282ead8'
    """
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
