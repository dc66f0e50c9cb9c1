"""Huffman codebooks of wider values (``golden/huffman.py``, docs/huffman.md "bf16
values"): a bf16 value's top ``coded_bits`` coded, the rest raw after the code, and an
escape for the coded parts the earlier batches never showed."""

import json

import numpy as np
import pytest

from linkcodec.bundled import bundled_bf16_files
from linkcodec.cli import main
from linkcodec.golden import link as golden_link
from linkcodec.golden.huffman import (CODED_BITS, HuffmanCodebook, HuffmanCodebookError,
                                      HuffmanDecodeError, HuffmanInvalidCodeError,
                                      HuffmanTruncatedStreamError, average_pmf, check_split,
                                      coded_part)
from linkcodec.rtl.huffman import check_codebook


def bits_of(data, nbits):
    return "".join(f"{byte:08b}" for byte in data)[:nbits]


@pytest.fixture(scope="module")
def layer_steps():
    """The 4 steps of one bf16 layer and kind of the bundled sample."""
    return [np.load(path).reshape(-1)
            for path in bundled_bf16_files("ffn2_grad", layers=[1])]


def two_symbol_book():
    """coded_bits 8 of 16: symbol 0x3f has a 1-bit code, the escape the other."""
    lengths = np.zeros(256, dtype=np.int64)
    lengths[0x3F] = 1
    return HuffmanCodebook(lengths, value_bits=16, coded_bits=8, escape_length=1)


# -- the bit layout, by hand -----------------------------------------------------------

def test_a_value_is_its_code_then_its_tail_and_an_escape_the_whole_value():
    book = two_symbol_book()
    # Canonical order: symbol 0x3f (code 0), then the escape (symbol 256, code 1).
    assert (int(book.codes[0x3F]), book.escape_code, book.escape_length) == (0, 1, 1)
    data, nbits = book.encode(np.array([0x3F80, 0x1234, 0x3F01], dtype=np.uint16))
    assert bits_of(data, nbits) == ("0" + "10000000"                 # 0x3f80: code, tail
                                    + "1" + "0001001000110100"       # 0x1234: escape, value
                                    + "0" + "00000001")              # 0x3f01
    assert nbits == 9 + 17 + 9
    assert book.decode(data, nbits).tolist() == [0x3F80, 0x1234, 0x3F01]


@pytest.mark.parametrize("coded_bits", list(CODED_BITS))
def test_every_split_round_trips_the_bundled_sample_at_its_counted_bits(coded_bits,
                                                                        layer_steps):
    book = HuffmanCodebook.from_batches(layer_steps[:3], value_bits=16,
                                        coded_bits=coded_bits)
    assert (book.value_bits, book.coded_bits, book.tail_bits) == (16, coded_bits,
                                                                  16 - coded_bits)
    late = layer_steps[3]
    data, nbits = book.encode(late)
    assert nbits == int(book.value_lengths()[late >> (16 - coded_bits)].sum())
    assert np.array_equal(book.decode(data, nbits), late)
    assert book.decode(data, nbits).dtype == np.uint16


def test_every_value_is_codable_by_the_escape(layer_steps):
    book = HuffmanCodebook.from_batches(layer_steps[:1], value_bits=16)
    unseen = np.flatnonzero(book.lengths == 0)
    assert unseen.size > 1000          # most 11-bit parts: the earlier step never showed them
    values = np.arange(1 << 16, dtype=np.uint16)    # every bf16 bit pattern
    data, nbits = book.encode(values)
    assert np.array_equal(book.decode(data, nbits), values)
    escaped = np.isin(values >> 5, unseen)
    assert nbits == int(np.where(escaped, book.escape_length + 16,
                                 book.lengths[values >> 5].astype(np.int64) + 5).sum())


def test_the_escape_weighs_the_smoothing(layer_steps):
    """Seen parts share 1 - smoothing, the escape takes smoothing: a larger smoothing
    gives the escape a shorter code."""
    small = HuffmanCodebook.from_batches(layer_steps[:3], value_bits=16)
    large = HuffmanCodebook.from_batches(layer_steps[:3], value_bits=16, smoothing=2.0**-6)
    assert large.escape_length < small.escape_length
    pmf, _, _ = average_pmf(layer_steps[:3], value_bits=16)
    assert np.array_equal(small.lengths > 0, pmf > 0)
    assert small.source["escape"] is True


def test_without_escape_every_part_gets_a_code(layer_steps):
    book = HuffmanCodebook.from_batches(layer_steps[:3], value_bits=16, escape=False)
    assert book.escape_length == 0 and int(book.lengths.min()) >= 1
    data, nbits = book.encode(layer_steps[3])
    assert np.array_equal(book.decode(data, nbits), layer_steps[3])


def test_e4m3_codebooks_are_as_before():
    symbols = np.arange(256, dtype=np.uint8).repeat(3)
    book = HuffmanCodebook.from_batches([symbols])
    assert book.is_e4m3 and book.to_json().count('"version": 1') == 1
    assert "value_bits" not in book.to_json()


# -- checks at the boundaries ----------------------------------------------------------

@pytest.mark.parametrize("value_bits, coded_bits, ok", [
    (16, 8, True), (16, 12, True), (16, 7, False), (16, 13, False),
    (8, 8, True), (8, 9, False), (12, 8, False), (16, None, True)])
def test_the_split_is_checked(value_bits, coded_bits, ok):
    if ok:
        assert check_split(value_bits, coded_bits)[1] == (coded_bits or 11)
    else:
        with pytest.raises(HuffmanCodebookError, match=r"(value|coded)_bits is"):
            check_split(value_bits, coded_bits)


def test_an_escape_needs_smoothing():
    with pytest.raises(HuffmanCodebookError, match="smoothing is 0"):
        HuffmanCodebook.from_pmf(np.ones(2048), smoothing=0, value_bits=16)


def test_a_missing_code_needs_an_escape():
    lengths = np.zeros(256, dtype=np.int64)
    lengths[0] = 1
    with pytest.raises(HuffmanCodebookError, match="symbol 1 has no code .* or the codebook "
                                                   "an escape"):
        HuffmanCodebook(lengths, value_bits=16, coded_bits=8)


def test_values_of_the_wrong_width_are_refused(layer_steps):
    book = HuffmanCodebook.from_batches(layer_steps[:1], value_bits=16)
    with pytest.raises(TypeError, match="uint16 array of bf16 bit patterns, not uint8"):
        book.encode(np.zeros(4, dtype=np.uint8))
    with pytest.raises(TypeError, match="uint16"):
        coded_part(np.zeros(4, dtype=np.int32), 16)


# -- bad frames: errors at the bit ------------------------------------------------------

def test_a_frame_one_bit_short_of_its_last_tail_is_truncated_there():
    book = two_symbol_book()
    data, nbits = book.encode(np.array([0x3F80, 0x3F81], dtype=np.uint16))
    assert book.decode(data, nbits).tolist() == [0x3F80, 0x3F81]        # the last valid
    with pytest.raises(HuffmanTruncatedStreamError,
                       match=r"a value at bit 9 needs 9 bits .* ends at bit 17") as error:
        book.decode(data, nbits - 1)
    assert (error.value.bit, error.value.length) == (9, 9)


def test_a_frame_short_of_an_escaped_value_is_truncated_at_its_escape():
    book = two_symbol_book()
    data, nbits = book.encode(np.array([0x3F80, 0x1234], dtype=np.uint16))
    with pytest.raises(HuffmanTruncatedStreamError,
                       match=r"an escaped value at bit 9 needs 17 bits"):
        book.decode(data, nbits - 1)


def test_bits_that_start_no_code_are_named():
    lengths = np.zeros(256, dtype=np.int64)
    lengths[0x3F] = 2                       # code 00; the escape 01; 1x starts none
    book = HuffmanCodebook(lengths, value_bits=16, coded_bits=8, escape_length=2)
    data, nbits = book.encode(np.array([0x3F00], dtype=np.uint16))
    frame = bytes([data[0], data[1] | 0x3F])
    with pytest.raises(HuffmanInvalidCodeError, match="invalid code at bit 10") as error:
        book.decode(frame, 12)
    assert error.value.bit == 10
    with pytest.raises(HuffmanDecodeError, match="nbits is 17"):
        book.decode(frame, 17)


# -- files, the command, and who refuses them ------------------------------------------

def test_a_split_codebook_file_round_trips_and_bad_ones_are_refused(layer_steps, tmp_path):
    book = HuffmanCodebook.from_batches(layer_steps[:3], value_bits=16, coded_bits=10)
    assert HuffmanCodebook.from_json(book.to_json()) == book
    fields = json.loads(book.to_json())
    assert (fields["version"], fields["value_bits"], fields["coded_bits"]) == (2, 16, 10)
    for change, message in [({"coded_bits": 13}, "coded_bits is 13"),
                            ({"escape_length": 0}, "symbol 0 has no code .* or the "
                                                   "codebook an escape"),
                            ({"escape_code": 1 << 24}, "escape_code 16777216 does not fit"),
                            ({"value_bits": "16"}, "value_bits must be an integer")]:
        with pytest.raises(HuffmanCodebookError, match=message):
            HuffmanCodebook.from_json(json.dumps({**fields, **change}))
    whole = json.loads(HuffmanCodebook.from_batches(layer_steps[:3], value_bits=16,
                                                    escape=False).to_json())
    assert whole["escape_length"] == 0
    with pytest.raises(HuffmanCodebookError, match="escape_code is not 0 but escape_length"):
        HuffmanCodebook.from_json(json.dumps({**whole, "escape_code": 1}))


def test_codebook_build_value_bits_16(tmp_path, capsys):
    files = [str(path) for path in bundled_bf16_files("ffn1_act", layers=[4], steps=[0, 1])]
    out = tmp_path / "book.json"
    assert main(["codebook", "build", "--from", *files, "--value-bits", "16",
                 "--coded-bits", "9", "--max-length", "13", "-o", str(out)]) == 0
    book = HuffmanCodebook.load(out)
    assert (book.value_bits, book.coded_bits, book.max_length) == (16, 9, 13)
    assert "top 9 of 16 bits coded, 7 raw" in capsys.readouterr().out
    assert main(["codebook", "build", "--from", *files, "--value-bits", "16", "-o",
                 str(out)]) == 0
    assert HuffmanCodebook.load(out).coded_bits == 11            # the default split
    assert main(["codebook", "build", "--from", *files, "--coded-bits", "11", "-o",
                 str(out)]) != 0
    assert "give --value-bits 16" in capsys.readouterr().err


def test_the_e4m3_hardware_and_link_refuse_split_codebooks(layer_steps):
    book = HuffmanCodebook.from_batches(layer_steps[:1], value_bits=16)
    with pytest.raises(ValueError, match="the hardware blocks take e4m3 codebooks"):
        check_codebook(book)
    with pytest.raises(ValueError, match="carry e4m3 codebooks"):
        golden_link.FlitWriter(golden_link.LinkFormat(codec="huffman")).load(book)
