"""UCIe's CRC-16 in hardware: XOR matrices derived from the golden model
(:mod:`linkcodec.golden.crc`), for the link's CRC field (``rtl/link.py``).

The CRC is linear with an initial value of 0, so a message cut into pieces of ``n``
bytes is taken a piece a cycle::

    register = advance(register, n) ^ crc_of_bytes(piece)

where :func:`crc_of_bytes` is the register that the piece alone leaves (a 16-row XOR
matrix over the piece's bits) and :func:`advance` moves a register past ``n`` zero bytes
(16 x 16). Each row is found by putting one bit through :func:`crc16_update`.

Pieces are as the link's words hold them: byte 0 in the top bits.
"""

from functools import cache

from amaranth.hdl import Cat, Const

from ..golden.crc import crc16_update

__all__ = ["advance", "crc_of_bytes", "crc_field"]


@cache
def _data_rows(nbytes):
    """For each register bit, the piece bits (byte 0 in the top bits) it is the XOR of."""
    rows = [[] for _ in range(16)]
    for byte in range(nbytes):
        for bit in range(8):
            data = bytearray(nbytes)
            data[byte] = 1 << bit
            register = crc16_update(0, data)
            position = 8 * (nbytes - 1 - byte) + bit
            for out in range(16):
                if register >> out & 1:
                    rows[out].append(position)
    return tuple(tuple(row) for row in rows)


@cache
def _advance_rows(nbytes):
    rows = [[] for _ in range(16)]
    for bit in range(16):
        register = crc16_update(1 << bit, bytes(nbytes))
        for out in range(16):
            if register >> out & 1:
                rows[out].append(bit)
    return tuple(tuple(row) for row in rows)


def _xor(value, positions):
    if not positions:
        return Const(0, 1)
    return Cat(*[value[position] for position in positions]).xor()


def crc_of_bytes(piece, nbytes):
    """The CRC register (16 bits) that the ``nbytes``-byte ``piece`` leaves from 0."""
    if len(piece) != 8 * nbytes:
        raise ValueError(f"a piece of {nbytes} bytes is {8 * nbytes} bits, not {len(piece)}")
    return Cat(*[_xor(piece, row) for row in _data_rows(nbytes)])


def advance(register, nbytes):
    """``register`` moved past ``nbytes`` zero bytes."""
    if nbytes == 0:
        return register
    return Cat(*[_xor(register, row) for row in _advance_rows(nbytes)])


def crc_field(crcs):
    """The CRC field of a flit's last bytes (the lowest bits of its last word) for the CRC
    registers ``crcs`` of its halves, first half first: each low byte first."""
    return Cat(*[Cat(crc[8:16], crc[:8]) for crc in reversed(crcs)])
