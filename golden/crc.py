"""The link's CRC: UCIe's CRC-16 (UCIe 1.1, section 3.7), the golden model that the link
hardware's CRC matrices are derived from (``rtl/crc.py``).

- Generator polynomial x^16 + x^15 + x^2 + 1 (0x8005), initial value 0, no final XOR.
- The CRC is always computed over a 128-byte message; a shorter one is zero-extended at
  its end (its "most significant" bytes, bytes ``len .. 127``, are 0).
- The message goes in from bit 0 of byte 0, bit 0 to bit 7 of each byte, byte 0 first:
  the bit-reflected form of the shift register, as CRC-16/ARC computes it (the same
  parameters: ``crc16_update(0, b"123456789")`` is ARC's check value, 0xBB3D).
- The CRC ``C[15:0]`` is the register after the last bit; it goes out as two bytes,
  CRC byte 0 = ``C[7:0]`` and CRC byte 1 = ``C[15:8]``.

The spec's normative code (``crc_gen.vs``, attached to the specification's PDF) is not
public; the register-to-byte mapping above is our reading of its text, and
``docs/bitstream.md`` ("CRC") gives a worked example. ``tests/test_golden_crc.py``
checks :func:`crc16` against an independent implementation (PyPI ``crc``).
"""

__all__ = ["CRC_MESSAGE_BYTES", "CRC_POLYNOMIAL", "crc16", "crc16_update"]

#: Bytes every CRC message has (a shorter message is zero-extended to it).
CRC_MESSAGE_BYTES = 128
#: The generator polynomial, x^16 + x^15 + x^2 + 1 (the x^16 term implied).
CRC_POLYNOMIAL = 0x8005
_REFLECTED = int(f"{CRC_POLYNOMIAL:016b}"[::-1], 2)          # 0xA001


def _table():
    table = []
    for byte in range(256):
        register = byte
        for _ in range(8):
            register = (register >> 1) ^ (_REFLECTED if register & 1 else 0)
        table.append(register)
    return tuple(table)


_TABLE = _table()


def crc16_update(register, data):
    """The CRC register after ``data`` (bytes) goes in, from ``register`` (0..0xFFFF).
    Linear: ``crc16_update(a ^ b, x ^ y) == crc16_update(a, x) ^ crc16_update(b, y)``."""
    if not isinstance(register, int) or not 0 <= register <= 0xFFFF:
        raise ValueError(f"a CRC register is 16 bits, not {register!r}")
    for byte in bytes(data):
        register = (register >> 8) ^ _TABLE[(register ^ byte) & 0xFF]
    return register


def crc16(message):
    """UCIe's CRC-16 of ``message`` (at most :data:`CRC_MESSAGE_BYTES` bytes, zero-extended
    to that)."""
    message = bytes(message)
    if len(message) > CRC_MESSAGE_BYTES:
        raise ValueError(f"a CRC message is at most {CRC_MESSAGE_BYTES} bytes, not "
                         f"{len(message)}")
    return crc16_update(0, message + bytes(CRC_MESSAGE_BYTES - len(message)))
