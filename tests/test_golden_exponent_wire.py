"""The exponent-remap wire format: two bit streams (11-bit values, escape bytes), the
golden encoder and decoder, every frame no valid encoder makes, refused at its bit, and
the escapes port's words (whole bytes in any word, a beat's escapes a word from the
encoder)."""

import ml_dtypes
import numpy as np
import pytest

from linkcodec.golden import exponent as ex
from linkcodec.golden.exponent import ExponentTable, ExponentWireError, WireFrame
from linkcodec.golden.words import UnterminatedFrameError
from linkcodec.rtl.blocks.beats import frame_words

TABLE = ExponentTable((127, 126, 128, 125, 129, 124, 130))
ALL = np.arange(1 << 16, dtype=np.uint16)


def test_every_bf16_pattern_round_trips_at_11_bits_plus_8_an_escape():
    wire = ex.wire_encode(ALL, TABLE)
    escapes = int(np.count_nonzero(TABLE.code_of[(ALL >> 7) & 0xFF] == ex.ESCAPE))
    assert wire.values_bits == 11 * ALL.size and wire.escapes_bits == 8 * escapes
    assert len(wire.values) == -(-wire.values_bits // 8) and len(wire.escapes) == escapes
    assert wire.compressed_bits() == ex.encode(ALL, TABLE).compressed_bits()
    assert np.array_equal(ex.wire_decode(wire, TABLE), ALL)


def test_bit_layout_known_answer():
    """1.0 (exponent 127: code 1) then -2**-126 (exponent 1: escaped), MSB first."""
    values = np.array([1.0, -(2.0 ** -126)], dtype=ml_dtypes.bfloat16)
    wire = ex.wire_encode(values, TABLE)
    # 001 0 0000000 | 000 1 0000000 | pad: 0010000000000010000000 + 00
    assert (wire.values_bits, wire.values) == (22, bytes([0b00100000, 0b00000010,
                                                          0b00000000]))
    assert (wire.escapes_bits, wire.escapes) == (8, bytes([1]))


def test_empty_and_one_value_frames():
    empty = ex.wire_encode(np.zeros(0, np.uint16), TABLE)
    assert empty == WireFrame(b"", 0, b"", 0)
    assert ex.wire_decode(empty, TABLE).size == 0
    one = ex.wire_encode(np.array([0x7F80], np.uint16), TABLE)      # +Inf: escaped
    assert ex.wire_decode(one, TABLE).tolist() == [0x7F80]


def frame_with_escapes():
    rng = np.random.default_rng(4)
    values = rng.integers(0, 1 << 16, 40, dtype=np.uint16)
    wire = ex.wire_encode(values, TABLE)
    assert wire.escapes_bits >= 16
    return values, wire


def refused(wire, stream, bit, match):
    with pytest.raises(ExponentWireError, match=match) as error:
        ex.wire_decode(wire, TABLE)
    assert (error.value.stream, error.value.bit) == (stream, bit)


def test_values_stream_must_hold_whole_values():
    values, wire = frame_with_escapes()
    # the last whole value decodes; one bit short cuts it off, where it begins
    fewer = ex.wire_encode(values[:-1], TABLE)
    assert np.array_equal(ex.wire_decode(fewer, TABLE), values[:-1])
    refused(wire._replace(values_bits=wire.values_bits - 1), "values", 11 * 39,
            "truncated value at bit 429 of the values stream")
    refused(wire._replace(values_bits=wire.values_bits + 11), "values", 8 * len(wire.values),
            "claims 451 bits but holds 440")


def test_escapes_stream_must_match_the_escape_codes():
    values, wire = frame_with_escapes()
    count = wire.escapes_bits // 8
    short = wire._replace(escapes=wire.escapes[:-1], escapes_bits=wire.escapes_bits - 8)
    refused(short, "escapes", 8 * (count - 1), "missing escape at bit")
    extra = wire._replace(escapes=wire.escapes + b"\x00", escapes_bits=wire.escapes_bits + 8)
    refused(extra, "escapes", 8 * count, f"extra escape at bit {8 * count}")
    refused(wire._replace(escapes_bits=wire.escapes_bits - 1), "escapes", 8 * (count - 1),
            "not whole exponent bytes")


def test_an_escape_of_a_table_exponent_is_refused():
    """The escape may carry any exponent outside the table (the last valid), none inside."""
    values = np.array([0x3F80, 0x0080, 0x4000], np.uint16)     # exponents 127, 1, 128
    wire = ex.wire_encode(values, TABLE)
    assert wire.escapes == bytes([1])
    outside = wire._replace(escapes=bytes([131]))               # not in the table: fine
    assert ex.wire_decode(outside, TABLE).tolist() == [0x3F80, 131 << 7, 0x4000]
    inside = wire._replace(escapes=bytes([130]))                # the table's code 7
    refused(inside, "escapes", 0, "value 1 escapes exponent 130, which the table sends as "
            "code 7")


def test_bad_arguments():
    _, wire = frame_with_escapes()
    with pytest.raises(TypeError, match="wire must be a WireFrame"):
        ex.wire_decode(tuple(wire), TABLE)
    with pytest.raises(TypeError, match="table must be an ExponentTable"):
        ex.wire_decode(wire, (1, 2, 3, 4, 5, 6, 7))
    refused(wire._replace(escapes_bits=-8), "escapes", 0, "cannot be negative")
    with pytest.raises(ex.ExponentFormatError, match="not float32"):
        ex.wire_encode(np.zeros(3, np.float32), TABLE)


# -- what a decoder emits for any frame ------------------------------------------------

def test_prefix_of_a_good_frame_is_the_frame():
    values, wire = frame_with_escapes()
    out, error = ex.wire_decode_prefix(wire, TABLE)
    assert np.array_equal(out, values) and not error


def escape_values(wire):
    codes = (ex.wire_decode(wire, TABLE) >> 7) & 0xFF
    return np.flatnonzero(TABLE.code_of[codes] == ex.ESCAPE)


def test_prefix_stops_at_the_first_fault():
    values, wire = frame_with_escapes()
    escaped = escape_values(wire)
    # one value's bits short: all whole values, then the error
    out, error = ex.wire_decode_prefix(wire._replace(values_bits=wire.values_bits - 1), TABLE)
    assert np.array_equal(out, values[:-1]) and error
    # the last escape missing: the values before the value that needed it
    count = wire.escapes_bits // 8
    out, error = ex.wire_decode_prefix(wire._replace(escapes_bits=8 * (count - 1)), TABLE)
    assert np.array_equal(out, values[:escaped[-1]]) and error
    # a cut-off escape byte counts as missing
    out, error = ex.wire_decode_prefix(wire._replace(escapes_bits=8 * count - 1), TABLE)
    assert np.array_equal(out, values[:escaped[-1]]) and error
    # the second escape carries a table exponent: the values before its value
    bad = bytearray(wire.escapes)
    bad[1] = 127
    out, error = ex.wire_decode_prefix(wire._replace(escapes=bytes(bad)), TABLE)
    assert np.array_equal(out, values[:escaped[1]]) and error
    # an extra escape: every value, then the error
    extra = wire._replace(escapes=wire.escapes + b"\x05", escapes_bits=wire.escapes_bits + 8)
    out, error = ex.wire_decode_prefix(extra, TABLE)
    assert np.array_equal(out, values) and error


def test_words_of_both_ports():
    values, wire = frame_with_escapes()
    frames = [(values, wire), *[(v, ex.wire_encode(v, TABLE)) for v in
                                (np.zeros(0, np.uint16), np.array([0x7F80], np.uint16))]]
    value_words = [w for _, f in frames for w in frame_words(f.values, f.values_bits, 32)]
    escape_words = [w for _, f in frames for w in frame_words(f.escapes, f.escapes_bits, 32)]
    decoded = ex.wire_decode_words(value_words, escape_words, 32, TABLE)
    assert [(out.tolist(), error) for out, error in decoded] == [
        (v.tolist(), False) for v, _ in frames]
    # a non-final escape word of 12 bits, not whole bytes: a word fault where its bits
    # begin (bit 0 here); of 8 bits it is fine, one escape, and the next word's first
    # byte is read as the second
    faulty = [dict(word) for word in escape_words]
    faulty[0]["bits"] = 12
    assert faulty[0]["last"] == 0
    out, error = ex.wire_decode_words(value_words, faulty, 32, TABLE)[0]
    assert np.array_equal(out, values[:escape_values(wire)[0]]) and error
    faulty[0]["bits"] = 8
    frame = ex.escape_frames(faulty, 32)[0]
    assert frame.fault is None and frame.data[:1] == wire.escapes[:1]
    assert frame.data[1:5] == wire.escapes[4:8]
    with pytest.raises(ValueError, match="values port holds 3 frames and the escapes port 2"):
        ex.wire_decode_words(value_words, escape_words[:-1], 32, TABLE)


# -- the escapes port's words ------------------------------------------------------------

def test_escape_words_are_a_beats_escapes_each():
    """One word a beat of ``lanes`` values that holds an escape, MSB first; the last
    beat's word ends the frame, or an empty last word when that beat has no escape."""
    ones = np.full(12, 0x3F80, np.uint16)                       # 1.0: code 1
    values = ones.copy()
    values[[1, 2, 9]] = [0x0080, 0x0100, 0x7F80]                 # exponents 1, 2, 255
    words = ex.escape_words(values, TABLE, lanes=4, word_width=64)
    assert words == [{"data": 0x0102 << 48, "bits": 16, "last": 0},
                     {"data": 0xFF << 56, "bits": 8, "last": 1}]
    values[9] = 0x3F80                                           # the last beat: none
    assert ex.escape_words(values, TABLE, lanes=4, word_width=64) == [
        {"data": 0x0102 << 48, "bits": 16, "last": 0}, {"data": 0, "bits": 0, "last": 1}]
    assert ex.escape_words(ones[:0], TABLE, lanes=4, word_width=64) == [
        {"data": 0, "bits": 0, "last": 1}]
    every = ex.escape_words(np.full(10, 0x0080, np.uint16), TABLE, lanes=4, word_width=48)
    assert [(word["bits"], word["last"]) for word in every] == [(32, 0), (32, 0), (16, 1)]
    with pytest.raises(ValueError, match="a word of 24 bits cannot hold them"):
        ex.escape_words(values, TABLE, lanes=4, word_width=24)


def test_escape_frames_take_whole_bytes_from_any_word():
    """Any whole number of bytes in any word, the escapes of a frame joined; the faults:
    bits not whole bytes, more than the word, or 0 on a word that is not the last."""
    def word(raw, last=0, bits=None):
        return {"data": int.from_bytes(raw + bytes(4 - len(raw)), "big"),
                "bits": 8 * len(raw) if bits is None else bits, "last": last}

    words = [word(b"\x01"), word(b"\x02\x03\x04\x05"), word(b"\x06\x07", 1),
             word(b"", 1), word(b"\x08\x09\x0a", 1)]
    frames = ex.escape_frames(words, 32)
    assert [(frame.data, frame.nbits, frame.fault, frame.words) for frame in frames] == [
        (b"\x01\x02\x03\x04\x05\x06\x07", 56, None, 3), (b"", 0, None, 1),
        (b"\x08\x09\x0a", 24, None, 1)]
    for bad, position in [(word(b"\x02\x03", bits=12), 8), (word(b"", bits=0), 8),
                          (word(b"\x02", bits=40), 8)]:
        frame, = ex.escape_frames([word(b"\x01"), bad, word(b"\x06", 1)], 32)
        assert (frame.data, frame.nbits, frame.fault) == (b"\x01", 8, position)
    frame, = ex.escape_frames([word(b"\x01\x02", 1, bits=20)], 32)   # a final word too
    assert (frame.data, frame.fault) == (b"", 0)
    assert ex.escape_word_faults([8, 0, 0, 12, 40], [0, 0, 1, 1, 1], 32).tolist() == [
        False, True, False, True, True]
    with pytest.raises(UnterminatedFrameError, match="no word that has last = 1"):
        ex.escape_frames([word(b"\x01")], 32)


def test_words_of_both_ports_as_the_encoder_sends_them():
    """Per-beat escapes words decode as full ones do; regrouped bytes too, and a lone
    escape in a long frame."""
    values, wire = frame_with_escapes()
    value_words = frame_words(wire.values, wire.values_bits, 64)
    beats = ex.escape_words(values, TABLE, lanes=4, word_width=64)
    full = frame_words(wire.escapes, wire.escapes_bits, 64)
    assert len(beats) > len(full)
    for escapes in (beats, full):
        (out, error), = ex.wire_decode_words(value_words, escapes, 64, TABLE)
        assert np.array_equal(out, values) and not error
    lone = np.full(4096, 0x3F80, np.uint16)
    lone[2048] = 0x0080
    words = ex.escape_words(lone, TABLE, lanes=4, word_width=64)
    assert words == [{"data": 1 << 56, "bits": 8, "last": 0}, {"data": 0, "bits": 0, "last": 1}]
    lone_wire = ex.wire_encode(lone, TABLE)
    (out, error), = ex.wire_decode_words(
        frame_words(lone_wire.values, lone_wire.values_bits, 64), words, 64, TABLE)
    assert np.array_equal(out, lone) and not error
