"""What only the Huffman blocks promise, under Verilator, bit-exact against the golden
model: extreme codebooks (15-bit codes back to back, one dominant 1-bit code), a shorter
code length limit (``max_length``) and its refusals, the bank switch's writes,
non-canonical codebooks refused, every code-space window, fuzzing with real symbols and
with an incomplete codebook, word faults. A codebook swap while traffic flows is in
``test_banks.py``, with the QLC blocks'.

The contract every block keeps (round trips with run-time tables at every lane count,
latency, symbols per cycle, parameter errors, counts beyond the lanes, fuzzed words, a
reset in mid-stream) is checked once for every block in ``test_contract.py``.

Runs vary the pause pattern (random, bursty, hold-then-release) unless they measure
timing; the seed is printed (replay with ``LINKCODEC_SEED``). Every case of one block and
lane count shares one Verilator build with the contract suite (the block with its default
codebook; the codebooks under test load through ``i_config``) and runs in its xdist group,
so builds never race and each is made once.
"""

import itertools

import numpy as np
import pytest
from amaranth.hdl import Fragment

from cases import block_case, fuzz_summary

from linkcodec.bundled import bundled_files
from linkcodec.golden.huffman import HuffmanCodebook, canonical_codes
from linkcodec.golden.qlc import QlcCode
from linkcodec.golden.words import decode_words
from linkcodec.rtl.huffman import (MAX_LENGTHS, SWITCH_ADDR, HuffmanDecoder, HuffmanEncoder,
                                   config_writes, default_codebook)
from linkcodec.rtl.blocks.beats import decoder_beats, frame_words, split_frames
from linkcodec.rtl.blocks import get_block
from linkcodec.sim.fuzz import check_frames, code_space_frames, fuzz_frames, run_fuzz
from linkcodec.sim.harness import first_mismatch, run_beats, run_frames
from linkcodec.rtl.blocks.huffman import HuffmanDecoderBlock, HuffmanEncoderBlock



def real_symbols(kind="ffn2_act", layer=3, count=None):
    symbols = np.load(bundled_files(kind, layers=[layer])[0]).reshape(-1)
    return symbols if count is None else symbols[:count]


def real_codebook():
    """The codebook ``linkcodec codebook build`` makes from a real activation tensor."""
    book = get_block("huffman-encoder").fitted_tables([real_symbols(layer=0)])
    assert int(book.lengths.max()) == 15 and book != default_codebook()
    return book


def fifteen_bit_codebook():
    """Lengths 1..7 for symbols 0..6, 15 bits for the other 249: an incomplete codebook
    (7 15-bit codes unused), so some windows start no code."""
    lengths = np.full(256, 15, dtype=np.uint8)
    lengths[:7] = np.arange(1, 8)
    book = HuffmanCodebook(lengths)
    assert book.kraft_sum < 1
    return book


def dominant_codebook():
    """One dominant symbol (37) with a 1-bit code; the rest share the other half."""
    counts = np.zeros(256)
    counts[37] = 1
    book = HuffmanCodebook.from_pmf(counts)
    assert book.lengths[37] == 1
    return book


@pytest.mark.parametrize(("block", "lanes", "codebook", "pattern"), [
    block_case(block, lanes, name, pattern, id=f"{block}-{lanes}-{name}-{pattern}")
    for (block, lanes), (name, pattern) in itertools.product(
        [("huffman-encoder", 1), ("huffman-encoder", 4), ("huffman-decoder", 1),
         ("huffman-decoder", 4)], [("fifteen-bit", "random"), ("dominant", "bursty")])])
def test_bit_exact_with_extreme_codebooks(block, lanes, codebook, pattern, seed):
    """15-bit codes back to back, and a codebook with one dominant 1-bit symbol."""
    book = fifteen_bit_codebook() if codebook == "fifteen-bit" else dominant_codebook()
    rng = np.random.default_rng(7)
    frames = [np.arange(256, dtype=np.uint8),
              np.full(200, 255, np.uint8),                         # the longest codes
              np.repeat(np.uint8(37), 300),                        # the shortest code
              rng.choice(np.array([37, 0, 1, 2, 200], np.uint8), 400),
              rng.integers(0, 256, 100, dtype=np.uint8)]
    result = run_frames(block, frames, lanes=lanes, tables=book, idle=pattern, stall=pattern,
                        seed=seed)
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"


# -- the code length limit ------------------------------------------------------------------

def limited_codebook(max_length):
    """The codebook ``linkcodec codebook build --max-length`` makes from a real activation
    tensor: its longest code is the limit."""
    book = HuffmanCodebook.from_batches([real_symbols(layer=0)], max_length=max_length)
    assert int(book.lengths.max()) == max_length
    return book


@pytest.mark.parametrize(("block", "lanes", "max_length"), [
    block_case("huffman-encoder", 1, 11, group="huffman-encoder-1-m11"),
    # the shortest limit at the smallest lanes in make test; 2 lanes under -m slow
    block_case("huffman-decoder", 1, 10, group="huffman-decoder-1-m10"),
    block_case("huffman-decoder", 2, 11, group="huffman-decoder-2-m11", slow=True)])
def test_round_trip_at_a_shorter_limit(block, lanes, max_length, seed):
    """Blocks of a shorter ``max_length`` (10, the shortest, splits a code's first 9 bits
    into the 8-bit prefix and a 1-bit tail), their codebook fitted to it and loaded at run
    time: bit-exact with the golden model on real tensors, the longest codes back to back
    and random symbols, under random pauses."""
    description = {"huffman-encoder": HuffmanEncoderBlock,
                   "huffman-decoder": HuffmanDecoderBlock}[block](max_length=max_length)
    assert description.module_name(lanes=lanes).endswith(f"_m{max_length}")
    book = description.fitted_tables([real_symbols(layer=0)])
    assert book == limited_codebook(max_length)
    longest = np.flatnonzero(book.lengths == max_length).astype(np.uint8)
    rng = np.random.default_rng(11)
    frames = [real_symbols(count=3000), real_symbols("ffn1_grad", layer=2, count=2000),
              np.resize(longest, 300), rng.integers(0, 256, 500, dtype=np.uint8),
              np.zeros(0, np.uint8)]
    result = run_frames(description, frames, lanes=lanes, tables=book, idle="random",
                        stall="random", seed=seed)
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"
    assert result["symbols"] == sum(frame.size for frame in frames)


@pytest.mark.parametrize("cls", [HuffmanEncoder, HuffmanDecoder])
def test_max_length_is_checked(cls):
    """``max_length`` is 10..15: 9 and 16 are refused naming the value, 10 and 15 (the
    default) build; it is read-only."""
    assert (MAX_LENGTHS[0], MAX_LENGTHS[-1]) == (10, 15)
    for bad in (9, 16):
        with pytest.raises(ValueError, match=f"max_length must be 10..15, not {bad}$"):
            cls(lanes=1, max_length=bad)
    with pytest.raises(TypeError, match="max_length must be an integer, not 11.0"):
        cls(lanes=1, max_length=11.0)
    for good in (10, 15):
        block = cls(lanes=1, max_length=good)
        Fragment.get(block, None)
        assert block.max_length == good
    block = cls(lanes=1)
    Fragment.get(block, None)
    assert block.max_length == 15
    with pytest.raises(AttributeError):
        block.max_length = 12
    with pytest.raises(ValueError, match="max_length must be 10..15, not 9"):
        HuffmanDecoderBlock(max_length=9)


@pytest.mark.parametrize("cls", [HuffmanEncoder, HuffmanDecoder])
def test_a_codebook_longer_than_the_limit_is_refused(cls):
    """A codebook whose longest code is 12 bits: taken at ``max_length`` 12 (the
    boundary), refused at 11, by the block (as its reset codebook) and by
    :func:`config_writes`, with an error naming both lengths."""
    book = limited_codebook(12)
    side = "encoder" if cls is HuffmanEncoder else "decoder"
    Fragment.get(cls(lanes=1, tables=book, max_length=12), None)
    assert config_writes(book, block=side, max_length=12) == config_writes(book, block=side)
    message = (f"codebook {book.id} has a 12-bit code; the hardware takes codes of at most "
               f"11 bits")
    with pytest.raises(ValueError, match=message):
        cls(lanes=1, tables=book, max_length=11)
    with pytest.raises(ValueError, match=message):
        config_writes(book, block=side, max_length=11)
    with pytest.raises(ValueError, match="max_length must be 10..15, not 16"):
        config_writes(book, block=side, max_length=16)


def test_bank_switch_address_and_writes():
    """The writes load every entry (the decoder's limits first), then ask for the
    switch; without it, no switch."""
    book = real_codebook()
    encoder = config_writes(book, block="encoder")
    assert [write["addr"] for write in encoder] == [*range(256), SWITCH_ADDR]
    assert encoder[0]["data"] >> 15 == book.lengths[0]
    assert encoder[0]["data"] & 0x7FFF == int(book.codes[0]) << (15 - int(book.lengths[0]))
    decoder = config_writes(book, block="decoder", switch=False)
    # the limits first: the decoder's length tables follow them in a sweep that the
    # symbol writes then overlap
    assert [write["addr"] for write in decoder] == [*range(257, 272), *range(256)]
    order = np.lexsort((np.arange(256), book.lengths))
    assert [write["data"] for write in decoder[15:]] == order.tolist()
    with pytest.raises(ValueError, match="block must be 'encoder' or 'decoder'"):
        config_writes(book, block="both")


def test_tail_compare_only_at_one_lane_of_e4m3():
    """``tail_compare``: the 1-lane e4m3 decoder settles a length's tail by compares and
    has no tail table; at 2 and 4 lanes and for bf16 values a tail table a position (the
    round trips at every lane count run both)."""
    def submodules(block):
        return {entry[1] for entry in Fragment.get(block, None).subfragments}
    for lanes, value_bits, compare in ((1, 8, True), (2, 8, False), (4, 8, False),
                                       (1, 16, False)):
        block = HuffmanDecoder(lanes=lanes, value_bits=value_bits)
        assert block.tail_compare is compare
        names = submodules(block)
        assert "prefix_table0" in names
        assert ("tail_table0" in names) is not compare


def test_non_canonical_codebooks_are_refused():
    """A canonical codebook is accepted; the smallest change, two codes of one length
    swapped (still a prefix code), is refused with a clear error; so is a 16-bit code."""
    book = real_codebook()
    assert (book.codes == canonical_codes(book.lengths)).all()
    config_writes(book, block="encoder")
    same = np.flatnonzero(book.lengths == book.lengths[0])
    a, b = int(same[0]), int(same[1])
    codes = book.codes.astype(np.int64).copy()
    codes[[a, b]] = codes[[b, a]]
    swapped = HuffmanCodebook(book.lengths, codes)
    for block in ("encoder", "decoder"):
        with pytest.raises(ValueError, match=f"not canonical: symbol {a} has code"):
            config_writes(swapped, block=block)
    with pytest.raises(ValueError, match="not canonical"):
        HuffmanEncoder(tables=swapped)
    long = HuffmanCodebook.from_pmf(2.0 ** -np.arange(1, 257), max_length=20)
    assert long.lengths.max() > 15
    with pytest.raises(ValueError, match="has a 20-bit code; the hardware takes codes of at "
                                         "most 15 bits"):
        config_writes(long, block="decoder")
    with pytest.raises(TypeError, match="codebook must be a HuffmanCodebook"):
        config_writes("book", block="encoder")


@pytest.mark.xdist_group("huffman-encoder-qlc")
def test_an_encoder_loaded_with_a_qlc_code_gives_its_bitstream(seed):
    """An encoder looks each symbol's code up, so any prefix code given symbol by symbol
    codes through it (``check_encoder_code``; ``LinkTx``'s QLC streams code so): built
    at ``max_length`` 11 with the base QLC code and loaded at run time with an adapted one
    (``config_writes`` of a :class:`QlcCode`), its words are the QLC encoder's golden
    words, bit for bit, on real tensors, 11-bit codes back to back and random symbols,
    under random pauses."""
    qlc_block = get_block("qlc-encoder")
    code = qlc_block.fitted_tables([real_symbols(layer=0)])
    assert code != QlcCode.base() and int(code.length_of.max()) == 11
    rng = np.random.default_rng(3)
    longest = np.flatnonzero(code.length_of == 11).astype(np.uint8)
    frames = [real_symbols(count=2000), np.resize(longest, 200),
              rng.integers(0, 256, 300, dtype=np.uint8), np.zeros(0, np.uint8)]
    width = qlc_block.default_word_width(1)
    inputs, expected = {}, {}
    for frame in frames:
        frame_in, frame_out = qlc_block.frame_io(frame, lanes=1, word_width=width,
                                                 tables=code)
        for into, beats in ((inputs, frame_in), (expected, frame_out)):
            for port, values in beats.items():
                into.setdefault(port, []).extend(values)
    block = HuffmanEncoder(lanes=1, word_width=width, tables=QlcCode.base(), max_length=11)
    result = run_beats(block, inputs=inputs, expected=expected,
                       config={"i_config": config_writes(code, block="encoder")},
                       idle="random", stall="random", seed=seed,
                       name="huffman_encoder_qlc_code")
    assert result["bit_exact"], f"seed {result['seed']}: {first_mismatch(result)}"


def test_a_qlc_code_is_checked():
    """A QLC code (11-bit codes at most) is taken by an e4m3 encoder at ``max_length`` 11
    (the boundary) and refused at 10, by the block and by :func:`config_writes`, naming
    both lengths; its writes are each symbol's code MSB-aligned in 15 bits; a decoder, a
    bf16 encoder and a decoder's writes refuse it (they need canonical codebooks)."""
    code = get_block("qlc-encoder").example_tables()
    assert int(code.length_of.max()) == 11
    Fragment.get(HuffmanEncoder(lanes=1, tables=code, max_length=11), None)
    writes = config_writes(code, block="encoder")
    assert [write["addr"] for write in writes] == [*range(256), SWITCH_ADDR]
    for symbol in (0, int(np.argmax(code.length_of))):
        length = int(code.length_of[symbol])
        assert writes[symbol]["data"] == (length << 15 | int(code.code_of[symbol])
                                          << (15 - length))
    message = "the QLC code has a 11-bit code; this encoder takes codes of at most 10 bits"
    with pytest.raises(ValueError, match=message):
        HuffmanEncoder(lanes=1, tables=code, max_length=10)
    with pytest.raises(ValueError, match=message):
        config_writes(code, block="encoder", max_length=10)
    with pytest.raises(TypeError, match="tables must be a HuffmanCodebook, not QlcCode"):
        HuffmanDecoder(lanes=1, tables=code)
    with pytest.raises(TypeError, match="tables must be a HuffmanCodebook, not QlcCode"):
        HuffmanEncoder(lanes=1, tables=code, value_bits=16, coded_bits=11)
    with pytest.raises(TypeError, match="codebook must be a HuffmanCodebook, not QlcCode"):
        config_writes(code, block="decoder")


@pytest.mark.parametrize("cls", [HuffmanEncoder, HuffmanDecoder])
def test_tables_must_be_a_huffman_codebook(cls):
    """What the contract's parameter check does not say: the refusal of tables of the
    wrong type names the type they must be, the default codebook (``codebook`` is the
    ``tables`` property), and parameters that cannot be set."""
    with pytest.raises(TypeError, match="tables must be a HuffmanCodebook, not str"):
        cls(lanes=1, tables="default")
    block = cls(lanes=2)
    Fragment.get(block, None)      # elaborates: a block that is built, not just made
    assert (block.lanes, block.word_width, block.codebook) == (2, 16, default_codebook())
    assert block.codebook is block.tables
    with pytest.raises(AttributeError):
        block.lanes = 4


# -- the decoder on any input --------------------------------------------------------------

@pytest.mark.xdist_group("huffman-decoder-1")
def test_every_code_space_window(seed):
    """Every 12-bit window starts a frame (8,192 frames), with a real codebook limited to
    12 bits (every window of a 15-bit codebook would be 65,536 frames; the 15-bit codes
    are in ``test_bit_exact_with_extreme_codebooks``)."""
    book = HuffmanCodebook.from_batches([real_symbols(layer=0)], max_length=12)
    assert int(book.lengths.max()) == 12
    frames = code_space_frames(book, word_width=16, block="huffman-decoder")
    assert len(frames) == 2 * 4096
    report = check_frames(frames, lanes=1, code=book, seed=seed, idle="random",
                          stall="random", block="huffman-decoder", frames_per_run=10_000)
    assert report["frames"] == len(frames) and report["golden_errors"] > 0
    assert (report["mismatches"], report["hangs"]) == (0, 0), fuzz_summary(report)


@pytest.mark.parametrize(("block", "lanes", "codebook", "pattern"), [
    block_case("huffman-decoder", 1, "fifteen-bit", "hold", id="fifteen-bit-1"),
    block_case("huffman-decoder", 4, "real", "random", id="real-4"),
    block_case("huffman-decoder", 4, "fifteen-bit", "bursty", id="fifteen-bit-4")])
def test_differential_fuzz(block, lanes, codebook, pattern, seed):
    """Fuzzed frames (flipped bits, cut frames, bad ``bits`` counts, random words) of a
    real tensor's symbols mutated (the contract fuzzes random ones) and of an incomplete
    15-bit codebook, whose unused codes no complete codebook has: 0 mismatches, 0 hangs
    against golden/words.py."""
    book = real_codebook() if codebook == "real" else fifteen_bit_codebook()
    pool = real_symbols(layer=0) if codebook == "real" else None
    report = run_fuzz(250, lanes=lanes, code=book, pool=pool, seed=seed, idle=pattern,
                      stall=pattern, block=block)
    assert report["frames"] == 250 and report["faults_injected"] > 0
    assert (report["mismatches"], report["hangs"]) == (0, 0), fuzz_summary(report)


@pytest.mark.xdist_group("huffman-decoder-1")
def test_word_faults_and_bad_codes(seed):
    """A word fault, an unused code of an incomplete codebook and a truncated frame each
    end their frame with the error beat after the good symbols; the next frame decodes."""
    book = fifteen_bit_codebook()
    good = np.array([0, 1, 2, 3, 200, 6, 0, 200], dtype=np.uint8)
    data, nbits = book.encode(good)
    words = frame_words(data, nbits, 16)
    short = frame_words(*book.encode(good[:3]), 16)
    # symbols 0, 1 (3 bits), zero padding (five 0s), then 15 ones: no code starts there
    unused = frame_words(bytes([0b01000000, 0xFF, 0xFE]), 8 + 15, 16)
    cases = [
        [dict(words[0], bits=8)] + words[1:],                 # a short word: fault at 0
        short[:-1] + [dict(short[-1], bits=17)],              # a final word over W
        unused,                                               # an unused code
        frame_words(data[:-(-(nbits - 1) // 8)], nbits - 1, 16),   # truncated
    ]
    frames, wanted = [], []
    for words_in in cases:
        frames += words_in + frame_words(*book.encode(good), 16)      # then a good frame
    decoded = decode_words(book, frames, 16)
    for symbols, error in decoded:
        wanted += decoder_beats([symbols], 1, error_after=symbols.size if error else None)
    assert [error for _, error in decoded] == [True, False] * 4
    component = HuffmanDecoder(lanes=1)
    result = run_beats(component, inputs={"i": frames}, expected={"o": wanted},
                       config={"i_config": config_writes(book, block="decoder")},
                       idle="hold", stall="hold", seed=seed,
                       name=get_block("huffman-decoder").module_name(lanes=1))
    assert result["bit_exact"], f"seed {seed}: {first_mismatch(result)}"
    assert len(split_frames(result["output"]["o"])[0]) == 8


def test_fuzz_takes_decoder_blocks_only():
    book = real_codebook()
    rng = np.random.default_rng(1)
    frames = fuzz_frames(book, 20, word_width=16, rng=rng, block="huffman-decoder")
    assert len(frames) == 20
    with pytest.raises(ValueError, match="huffman-encoder is not a decoder block"):
        fuzz_frames(book, 3, word_width=16, rng=rng, block="huffman-encoder")
    with pytest.raises(TypeError, match="code must be a HuffmanCodebook, not QlcCode"):
        fuzz_frames(QlcCode.base(), 3, word_width=16, rng=rng, block="huffman-decoder")
    with pytest.raises(ValueError, match="unknown code-space kind 'wat'"):
        code_space_frames(book, word_width=16, block="huffman-decoder", kinds=("wat",))
