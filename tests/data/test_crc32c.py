"""CRC-32C against RFC 3720's test vectors; the chunked NumPy path against the byte loop."""

import doctest

import numpy as np

import functorch_core.data.iter.crc32c as crc_module
from functorch_core.data.iter.crc32c import crc32c


def test_crc32c_matches_rfc3720_and_the_long_path_matches_the_byte_loop():
    assert crc32c(bytes(32)) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    assert crc32c(bytes(range(31, -1, -1))) == 0x113FDB5C
    assert doctest.testmod(crc_module).failed == 0
    rng = np.random.default_rng(0)
    for n in (4095, 4096, 4097, 9999, 65536, 300001):
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        loop = crc_module._run(0xFFFFFFFF, data) ^ 0xFFFFFFFF
        assert crc32c(data) == loop, n
        assert crc32c(data[n // 3:], crc32c(data[:n // 3])) == loop
