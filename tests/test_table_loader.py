"""``rtl.table_loader.TableLoader`` under Verilator: table images in, against the golden
``config_writes`` of the same tables, with random idle input and random backpressure (seed
printed); bad images (each as ``golden.link.table_from_image`` refuses it, at its boundary)
end in an error beat and no switch write, and the next image loads."""

import numpy as np
import pytest

from linkcodec.golden.exponent import ExponentTable
from linkcodec.golden.huffman import HuffmanCodebook, code_lengths, smooth_pmf
from linkcodec.golden.link import canonical_qlc, table_from_image, table_image
from linkcodec.golden.qlc import QlcCode, QlcLayout
from linkcodec.rtl import exponent, huffman, qlc
from linkcodec.rtl.table_loader import IMAGE_BYTES, TableLoader
from linkcodec.sim.harness import run_beats

CONFIG = {"qlc": qlc, "huffman": huffman, "exponent": exponent}


def _config_writes(codec, tables, block):
    """The golden writes, without the switch write (exponent: one set for both blocks;
    QLC ``"codes"``: a Huffman encoder's writes of the QLC code)."""
    if block == "codes":
        return huffman.config_writes(tables, block="encoder", switch=False)
    if codec == "exponent":
        return exponent.config_writes(tables, switch=False)
    return CONFIG[codec].config_writes(tables, block=block, switch=False)


def _good_tables(codec, rng):
    if codec == "qlc":
        layouts = [QlcLayout.base(), QlcLayout((1, 3, 3, 3, 4, 4, 5, 8),
                                                  (2, 8, 8, 8, 16, 16, 32, 166))]
        return [canonical_qlc(QlcCode(layout, rng.permutation(256))) for layout in layouts]
    if codec == "exponent":
        # random ones, and the ends of the byte: exponents 0 and 255 first and last
        tables = [ExponentTable(tuple(rng.choice(256, 7, replace=False))) for _ in range(2)]
        middle = tuple(int(e) for e in rng.choice(np.arange(1, 255), 5, replace=False))
        return tables + [ExponentTable((0,) + middle + (255,)),
                         ExponentTable((255,) + middle + (0,))]
    books = []
    for longest in (15, 11):
        pmf = smooth_pmf(rng.dirichlet(np.full(256, 0.2)))
        books.append(HuffmanCodebook(code_lengths(pmf, max_length=longest)))
    books.append(HuffmanCodebook(np.full(256, 8)))          # Kraft's sum exactly 1
    return books


def _bad_images(codec, good):
    """``(what, image)`` pairs, each one change from a good image past its boundary."""
    image = bytearray(table_image(codec, good))
    bad = []

    def changed(what, **at):
        copy = bytearray(image)
        for index, value in at.items():
            copy[int(index[1:])] = value
        bad.append((what, bytes(copy)))

    if codec == "qlc":
        # the base layout: widths 3,3,3,3,3,4,5,8 and sizes 8,8,8,8,8,16,32,168
        changed("width 9 (8 is the widest)", b14=(9 << 4) | (image[14] & 1))
        changed("a reserved bit", b0=image[0] | 0x02)
        changed("sizes add up to 255", b15=image[15] - 1)
        changed("sizes add up to 257", b15=image[15] + 1)
        changed("area 0 holds 9 in 3 bits", b1=9, b15=image[15] - 1)
        # five areas of 256 in 8 bits, every symbol in area 0: 1,280, which is 256 in
        # 10 bits (and area 0 takes exactly its 256)
        changed("sizes add up to 1,280", **{f"b{2 * a}": (8 << 4) | (a < 5)
                                            for a in range(8)},
                **{f"b{2 * a + 1}": 0 for a in range(8)},
                **{f"b{k}": 0 for k in range(16, len(image))})
        # symbol 0's area (the first 3 body bits) moved to another: one area over-full
        first = image[16] >> 5
        changed("an area over-full", b16=(image[16] & 0x1F) | (((first + 1) % 8) << 5))
    elif codec == "exponent":
        changed("exponents 5 and 6 equal (the last pair only)", b6=image[5])
        changed("exponents 0 and 1 equal (the first pair)", b1=image[0])
    else:
        changed("a length of 0", b0=image[0] & 0x0F)
        changed("a length of 0, the last symbol", b127=image[127] & 0xF0)
        # all lengths 8 is a complete code; one code shorter breaks Kraft's inequality
        changed("Kraft's sum above 1", b0=(7 << 4) | (image[0] & 0x0F))
    bad.append(("an image a byte short", bytes(image[:-1])))
    bad.append(("an image a byte long", bytes(image) + b"\x00"))
    return bad


def _beats(image):
    return [{"data": byte, "last": int(k == len(image) - 1), "abort": 0}
            for k, byte in enumerate(image)]


def _images(codec, out):
    """The loader's writes cut at each image's end beat."""
    images, current = [], []
    for write in out:
        current.append(write)
        if write["error"] or write["addr"] == CONFIG[codec].SWITCH_ADDR:
            images.append(current)
            current = []
    assert not current, "writes after the last image's end beat"
    return images


@pytest.mark.parametrize("codec,block", [
    (codec, block) for codec in ("qlc", "huffman", "exponent")
    for block in ("encoder", "decoder")] + [("qlc", "codes")])
def test_images_load_as_config_writes(codec, block, seed, tmp_path_factory):
    rng = np.random.default_rng(seed)
    goods = _good_tables(codec, rng)
    if codec == "huffman":
        goods = goods[::-1]                 # the all-8 codebook first: its bad variants
    bads = _bad_images(codec, goods[0])
    for what, image in bads:
        if len(image) == IMAGE_BYTES[codec]:
            with pytest.raises(ValueError):
                table_from_image(codec, image)
    # Each bad image is followed by a good one: the loader recovers.
    good_image = table_image(codec, goods[0])
    sequence = [("good", _beats(good_image), goods[0])]
    for (what, image), good in zip(bads, goods[1:] * len(bads)):
        sequence += [(what, _beats(image), None), ("good", _beats(table_image(codec, good)), good)]
    # an abort beat part way (for an exponent image, in place of its last byte), and at once
    for cut in (min(50, IMAGE_BYTES[codec] - 1), 0):
        aborted = _beats(good_image)[:cut] + [{"data": 0, "last": 0, "abort": 1}]
        sequence += [(f"aborted after {cut} bytes", aborted, None),
                     ("good", _beats(good_image), goods[0])]
    beats = [beat for _, image, _ in sequence for beat in image]
    result = run_beats(TableLoader(codec=codec, block=block), inputs={"i": beats},
                       expected={}, idle="random", stall="random", seed=seed,
                       name=f"table_loader_{codec}_{block}", settle=4000 * len(sequence))
    images = _images(codec, result["output"]["o"])
    assert len(images) == len(sequence), f"seed {result['seed']}"
    switch = CONFIG[codec].SWITCH_ADDR
    for (what, _, tables), writes in zip(sequence, images):
        *body, end = writes
        if tables is None:
            assert end["error"] == 1, f"{what}: no error beat (seed {result['seed']})"
            assert all(w["addr"] < switch and not w["error"] for w in body), what
            if codec == "exponent":
                assert not body, f"{what}: a write before the error beat"
            assert end == {"addr": 0, "data": 0, "length": 0, "error": 1}, what
            continue
        assert end == {"addr": switch, "data": 0, "length": 0, "error": 0}
        want = _config_writes(codec, tables, block)
        got = {w["addr"]: w["data"] for w in body}
        assert len(got) == len(body), "an address written twice"
        assert got == {w["addr"]: w["data"] for w in want}, f"seed {result['seed']}"
        if codec == "exponent":
            assert all(w["length"] == 0 for w in body), "an exponent write with a length"
            continue
        lengths = (tables.length_of if codec == "qlc" else tables.lengths)
        for w in body:
            coder = block in ("encoder", "codes")
            expect = int(lengths[w["addr"]]) if coder and w["addr"] < 256 else 0
            assert w["length"] == expect, f"write {w}: length"


def test_parameters_are_checked():
    with pytest.raises(ValueError,
                       match="codec must be 'qlc', 'huffman' or 'exponent', not 'lz4'"):
        TableLoader(codec="lz4", block="encoder")
    with pytest.raises(ValueError, match="block must be 'encoder', 'decoder' or 'codes' for "
                                         "qlc, not 'both'"):
        TableLoader(codec="qlc", block="both")
    with pytest.raises(ValueError, match="block must be 'encoder' or 'decoder' for huffman, "
                                         "not 'codes'"):
        TableLoader(codec="huffman", block="codes")
    with pytest.raises(ValueError, match="block must be 'encoder' or 'decoder' for exponent, "
                                         "not 'codes'"):
        TableLoader(codec="exponent", block="codes")


@pytest.mark.parametrize("codec,most", [("qlc", 300), ("huffman", 420), ("exponent", 16)])
def test_cycles_an_image(codec, most):
    """The docstring's throughput: with no idle cycle and no backpressure, an image in
    at most ``most`` cycles (decoder writes, the longer for Huffman)."""
    tables = _good_tables(codec, np.random.default_rng(1))[:2]
    beats = [beat for good in tables for beat in _beats(table_image(codec, good))]
    result = run_beats(TableLoader(codec=codec, block="decoder"), inputs={"i": beats},
                       expected={}, idle="none", stall="none",
                       name=f"table_loader_{codec}_decoder", settle=2000)
    assert len(_images(codec, result["output"]["o"])) == 2
    cycles = max(result["output_cycles"]["o"]) - min(result["input_cycles"]["i"]) + 1
    print(f"{codec}: {cycles} cycles for 2 images")
    assert cycles <= 2 * most, cycles
