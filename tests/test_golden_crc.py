"""The link's CRC (golden/crc.py, and the CRC field of golden/link.py's flits) against an
independent implementation: PyPI ``crc`` (a test dependency only)."""

import numpy as np
import pytest
from crc import Calculator, Configuration

from linkcodec.golden.crc import CRC_MESSAGE_BYTES, crc16, crc16_update
from linkcodec.golden.link import (FLIT_BYTES, FlitError, FlitHeader, FlitWriter,
                                   LinkFormat, flit_crcs, frames_from_flits, seal)
from linkcodec.golden.qlc import QlcCode, QlcLayout

# UCIe's CRC as the `crc` package computes it: x^16 + x^15 + x^2 + 1, initial value 0,
# each byte's bit 0 first (reflected input and register), no final XOR.
UCIE = Calculator(Configuration(width=16, polynomial=0x8005, init_value=0,
                                final_xor_value=0, reverse_input=True,
                                reverse_output=True))


def test_the_check_value_and_random_messages_agree_with_the_crc_package():
    assert crc16_update(0, b"123456789") == UCIE.checksum(b"123456789") == 0xBB3D
    rng = np.random.default_rng(17)
    for size in (0, 1, 2, 63, 64, 126, 127, 128):
        message = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
        # zero-extended to 128 bytes at its end
        assert crc16(message) == UCIE.checksum(message + bytes(128 - size)), size


def test_a_message_longer_than_128_bytes_and_a_bad_register_are_refused():
    assert crc16(bytes(CRC_MESSAGE_BYTES)) == 0
    with pytest.raises(ValueError, match="at most 128 bytes, not 129"):
        crc16(bytes(CRC_MESSAGE_BYTES + 1))
    with pytest.raises(ValueError, match="16 bits"):
        crc16_update(1 << 16, b"")


def test_crc16_is_linear_as_the_hardware_matrices_assume():
    rng = np.random.default_rng(3)
    for _ in range(20):
        a, b = (int(x) for x in rng.integers(0, 1 << 16, 2))
        x, y = (rng.integers(0, 256, 16, dtype=np.uint8) for _ in range(2))
        assert (crc16_update(a ^ b, (x ^ y).tobytes())
                == crc16_update(a, x.tobytes()) ^ crc16_update(b, y.tobytes()))


@pytest.mark.parametrize("flit_bytes", FLIT_BYTES)
def test_each_half_of_a_flit_carries_its_crc_low_byte_first(flit_bytes):
    """The CRC field is the last 2 bytes a half (a 64-byte flit is one half); half h's
    CRC covers bytes 128h .. 128h + 127 with the CRC field read as 0, zero-extended."""
    rng = np.random.default_rng(flit_bytes)
    fmt = LinkFormat("qlc", flit_bytes=flit_bytes)
    body = rng.integers(0, 256, fmt.body_bytes, dtype=np.uint8).tobytes()
    header = FlitHeader(codec=0, table=False, bank=0, last=True, stream=0,
                        count=fmt.body_bytes, bits=8 * fmt.body_bytes)
    flit = fmt.flit(header, body)
    unsealed = header.pack() + body + bytes(fmt.crc_bytes)
    halves = [unsealed[start:start + 128] for start in range(0, flit_bytes, 128)]
    want = [UCIE.checksum(half + bytes(128 - len(half))) for half in halves]
    assert flit_crcs(flit) == want
    assert flit[-fmt.crc_bytes:] == b"".join(crc.to_bytes(2, "little") for crc in want)
    assert seal(flit) == flit


def _flits(flit_bytes=64):
    fmt = LinkFormat("qlc", flit_bytes=flit_bytes)
    writer = FlitWriter(fmt)
    flits = writer.load(QlcCode(QlcLayout.base(), np.arange(256)))
    flits += writer.frame(np.arange(300, dtype=np.uint8) % 40)
    return fmt, flits


@pytest.mark.parametrize("flit_bytes", FLIT_BYTES)
def test_every_single_bit_flip_is_named_as_a_crc_error(flit_bytes):
    """A flipped bit anywhere in a flit, header and CRC field included: the reader names
    the CRC, not the field the flip lands in (3 random bits a byte, for time)."""
    fmt, flits = _flits(flit_bytes)
    rng = np.random.default_rng(flit_bytes)
    target = len(flits) - 1
    for byte in range(flit_bytes):
        for bit in rng.choice(8, 3, replace=False):
            spoilt = bytearray(flits[target])
            spoilt[byte] ^= 1 << int(bit)
            with pytest.raises(FlitError) as error:
                frames_from_flits(fmt, flits[:target] + [bytes(spoilt)])
            assert error.value.field == "crc" and error.value.flit == target, (byte, bit)
