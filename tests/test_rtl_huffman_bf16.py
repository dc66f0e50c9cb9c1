"""The Huffman encoder of bf16 values (``HuffmanEncoder(value_bits=16, coded_bits=K)``,
``huffman-encoder-bf16`` in the registry): bit-exact against the golden codebook's frames
under random idle and backpressure, with the escape, at each split, loaded at run time,
and refusing what it cannot code; both blocks of 16-bit values refusing codebooks of
another split, and run by `linkcodec sim` from a codebook file (the decoder's other tests
are in ``tests/test_rtl_huffman_bf16_decoder.py``). The contract suite runs both as every
registered block."""

import json

import numpy as np
import pytest

from cases import bf16_steps, frames_with_escapes
from linkcodec.bundled import bundled_bf16_files
from linkcodec.cli import main
from linkcodec.golden.huffman import HuffmanCodebook
from linkcodec.rtl.huffman import (HuffmanDecoder, HuffmanEncoder, config_writes,
                                   default_codebook, split_escape_addr, split_switch_addr)
from linkcodec.rtl.blocks import get_block
from linkcodec.sim.harness import run_frames
from linkcodec.rtl.blocks.huffman import HuffmanEncoderBlock


@pytest.fixture(scope="module")
def steps():
    return bf16_steps()


@pytest.mark.xdist_group("huffman-encoder-bf16")
@pytest.mark.parametrize("lanes", [1, 4])
def test_bit_exact_with_escapes_under_pauses(lanes, steps):
    rng = np.random.default_rng(16 + lanes)
    book = HuffmanCodebook.from_batches(steps[:3], value_bits=16)
    frames = frames_with_escapes(steps, rng)
    escaped = int(np.isin(np.concatenate(frames) >> 5, np.flatnonzero(book.lengths == 0)).sum())
    assert escaped > 400                   # the escape is exercised, not only the codes
    result = run_frames("huffman-encoder-bf16", frames, lanes=lanes, tables=book, idle=0.3,
                        stall=0.3, seed=lanes)
    print("seed", result["seed"])
    assert result["bit_exact"], result
    assert result["payload_bits"] == sum(book.encode(frame)[1] for frame in frames)


@pytest.mark.parametrize("coded_bits", [8, 12])
def test_other_splits_bit_exact(coded_bits, steps):
    block = HuffmanEncoderBlock(value_bits=16, coded_bits=coded_bits)
    assert block.module_name(lanes=1) == f"linkcodec_huffman_encoder_l1_v16k{coded_bits}"
    book = HuffmanCodebook.from_batches(steps[:3], value_bits=16, coded_bits=coded_bits)
    frames = [steps[3][:2000], np.arange(0, 1 << 16, 97, dtype=np.uint16)]
    result = run_frames(block, frames, lanes=2, tables=book, idle=0.2, stall=0.2, seed=5)
    print("seed", result["seed"])
    assert result["bit_exact"], result


def test_a_codebook_without_escape_and_the_reset_one(steps):
    """Every part coded (escape length 0) loaded at run time; and the reset codebook,
    elaborated in: each value goes out as it came in, 16 bits."""
    whole = HuffmanCodebook.from_batches(steps[:3], value_bits=16, escape=False)
    frames = [steps[3][:1500], np.arange(0, 1 << 16, 251, dtype=np.uint16)]
    result = run_frames("huffman-encoder-bf16", frames, lanes=1, tables=whole, idle=0.2,
                        stall=0.2, seed=9)
    assert result["bit_exact"], result
    identity = default_codebook(16, 11)
    result = run_frames("huffman-encoder-bf16", frames, lanes=1, tables=identity,
                        runtime_config=False, seed=9)
    assert result["bit_exact"] and result["payload_bits"] == 16 * sum(f.size for f in frames)


def test_config_writes_of_a_split_codebook(steps):
    book = HuffmanCodebook.from_batches(steps[:3], value_bits=16, coded_bits=10)
    writes = config_writes(book, block="encoder")
    assert [w["addr"] for w in writes] == [*range(1024), split_escape_addr(10),
                                           split_switch_addr(10)] == [*range(1024), 1024, 2047]
    escape = writes[1024]["data"]
    assert escape >> 15 == book.escape_length                 # length above the code
    assert (escape & 0x7FFF) >> (15 - book.escape_length) == book.escape_code
    unseen = int(np.flatnonzero(book.lengths == 0)[0])
    assert writes[unseen]["data"] == 0                        # no code: the escape's


@pytest.mark.parametrize("component", [HuffmanEncoder, HuffmanDecoder])
def test_refusals(component, steps):
    """Either block of 16-bit values, and its description's config writes, refuse a
    codebook of another split; a split or limit out of range is refused by name."""
    e4m3 = default_codebook()
    with pytest.raises(ValueError, match="codes 8-bit values by their top 8 bits; this "
                                         "block codes 16-bit values by 11"):
        component(value_bits=16, tables=e4m3)
    with pytest.raises(ValueError, match="by their top 10 bits; this block codes 16-bit "
                                         "values by 11"):
        component(value_bits=16, tables=default_codebook(16, 10))
    with pytest.raises(ValueError, match="coded_bits is 13"):
        component(value_bits=16, coded_bits=13)
    with pytest.raises(ValueError, match="lanes"):
        component(value_bits=16, lanes=8)          # (the decoder takes 1 and 2, too)
    long = HuffmanCodebook.from_batches(steps[:1], value_bits=16, max_length=15)
    with pytest.raises(ValueError, match="at most 12 bits"):
        component(value_bits=16, tables=long, max_length=12)
    other = HuffmanCodebook.from_batches(steps[:1], value_bits=16, coded_bits=12)
    name = "huffman-encoder-bf16" if component is HuffmanEncoder else "huffman-decoder-bf16"
    with pytest.raises(ValueError, match="by their top 12 bits; this block codes 16-bit "
                                         "values by 11"):
        get_block(name).config_writes(other)
    if component is HuffmanDecoder:
        with pytest.raises(ValueError, match="lanes"):
            component(value_bits=16, lanes=4)


# (12 coded bits: the builds of test_other_splits_bit_exact[12] and its decoder's)
@pytest.mark.parametrize(("kind", "coded_bits"), [("encoder", 12), ("decoder", 12)])
def test_sim_takes_a_bf16_codebook(kind, coded_bits, tmp_path, capsys):
    """`linkcodec sim huffman-encoder|huffman-decoder --codebook book.json FILE...` with a
    codebook of 16-bit values runs the bf16 block of its split on bf16 files; `--fuzz N`
    fuzzes the decoder of that split (not the registry's, of 11 bits)."""
    files = [str(path) for path in bundled_bf16_files("ffn1_act", layers=[4])]
    book = tmp_path / "book.json"
    assert main(["codebook", "build", "--value-bits", "16", "--coded-bits", str(coded_bits),
                 "--from", *files[:3], "-o", str(book)]) == 0
    capsys.readouterr()
    assert main(["sim", f"huffman-{kind}", "--codebook", str(book), "--json", files[3],
                 "--idle", "0.2", "--stall", "0.2"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["bit_exact"] and report["block"] == f"huffman-{kind}-bf16"
    values = np.load(files[3]).reshape(-1)
    assert report["symbols"] == values.size
    assert report["payload_bits"] == HuffmanCodebook.load(book).encode(values)[1]
    assert get_block(f"huffman-{kind}-bf16").coded_bits == 11
    if kind == "decoder":
        assert main(["sim", "huffman-decoder", "--codebook", str(book), "--fuzz", "40",
                     "--json", files[3]]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["block"] == "huffman-decoder-bf16" and report["frames"] == 40
        assert report["faults_injected"] > 0 and report["bit_exact"]
