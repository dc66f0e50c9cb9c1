"""UCIe's CRC-16 in hardware: XOR matrices derived from the golden model
(:mod:`linkcodec.golden.crc`), for the link's CRC field (``rtl/link/``).

The CRC is linear with an initial value of 0, so a message cut into pieces of ``n``
bytes is taken a piece a cycle::

    register = advance(register, n) ^ crc_of_bytes(piece)

where :func:`crc_of_bytes` is the register that the piece alone leaves (a 16-row XOR
matrix over the piece's bits) and :func:`advance` moves a register past ``n`` zero bytes
(16 x 16). Each row is found by putting one bit through :func:`crc16_update`.

Pieces are as the link's words hold them: byte 0 in the top bits.
"""

from functools import cache

from amaranth.hdl import Cat, Const, Mux, Signal

from ..golden.crc import CRC_MESSAGE_BYTES, crc16_update

__all__ = ["advance", "crc_of_bytes", "crc_field", "flit_registers", "word_parts",
           "flit_good", "byte_contribution"]


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


def flit_registers(m, flit_bytes, nbytes, part, valid, row):
    """The CRC registers of a flit's halves (:func:`~linkcodec.golden.link.flit_crcs`) as
    its pieces of ``nbytes`` go by, one a cycle when ``valid`` (``row``: the piece's index
    in the flit; ``part``: :func:`crc_of_bytes` of the piece, its CRC field zero): each
    half's register, complete at the flit's last piece. A half is ``min(128,
    flit_bytes)`` bytes and zero-extended to 128; ``nbytes`` divides it."""
    half = min(CRC_MESSAGE_BYTES, flit_bytes)
    per_half = half // nbytes
    register = Signal(16)
    first = row[:(per_half - 1).bit_length()] == 0 if per_half > 1 else Const(1, 1)
    following = Signal(16)
    m.d.comb += following.eq(Mux(first, 0, advance(register, nbytes)) ^ part)
    with m.If(valid):
        m.d.sync += register.eq(following)
    done = advance(following, CRC_MESSAGE_BYTES - half)
    if flit_bytes <= CRC_MESSAGE_BYTES:
        return [done]
    earlier = Signal(16)                   # the first half's, kept to the flit's end
    with m.If(valid & (row == per_half - 1)):
        m.d.sync += earlier.eq(done)
    return [earlier, done]


def word_parts(m, data, last, *, flit_bytes, link_bytes, crc_bytes):
    """``(parts, part_bytes)``: the CRC parts (:func:`crc_of_bytes`) of a link word's
    ``data`` (byte 0 in the top bits), one a half of the flit that the word holds (the
    first half's in the top bits), its CRC field read as zero where ``last`` (the flit's
    last word) says it is there."""
    half_bytes = min(CRC_MESSAGE_BYTES, flit_bytes)
    part_bytes = min(half_bytes, link_bytes)
    count = link_bytes // part_bytes
    field_bits = 8 * crc_bytes
    masked = Signal(len(data))
    m.d.comb += masked.eq(Mux(last, Cat(Const(0, field_bits), data[field_bits:]), data))
    parts = Cat(*[crc_of_bytes(masked.word_select(count - 1 - k, 8 * part_bytes),
                               part_bytes) for k in range(count)])
    return parts, part_bytes


def flit_good(m, *, flit_bytes, link_bytes, crc_bytes, parts, valid, row, data):
    """Whether the flit whose last word is ``data`` (its :func:`word_parts` ``parts``;
    ``row``: its index in the flit) holds its halves' CRCs in its CRC field, the earlier
    words' parts having been taken a word a cycle when ``valid``."""
    part_bytes = min(CRC_MESSAGE_BYTES, flit_bytes, link_bytes)
    count = link_bytes // part_bytes
    if count == 1:
        crcs = flit_registers(m, flit_bytes, part_bytes, parts, valid, row)
    else:                                    # a word is the flit: both halves in it
        crcs = [parts.word_select(k, 16) for k in range(count)]
    return data[:8 * crc_bytes] == crc_field(crcs)


def byte_contribution(value, offset):
    """What a byte ``value`` (8 bits) at ``offset`` of a 128-byte message, every other
    byte zero, adds to its CRC register (the CRC is linear)."""
    rows = [[] for _ in range(16)]
    for bit in range(8):
        data = bytearray(CRC_MESSAGE_BYTES)
        data[offset] = 1 << bit
        register = crc16_update(0, data)
        for out in range(16):
            if register >> out & 1:
                rows[out].append(bit)
    return Cat(*[_xor(value, row) for row in rows])
