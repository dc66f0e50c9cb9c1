"""Go-back-N retry (issue 17): the sequence byte (golden), RetryTx and RetryRx
(``rtl/retry.py``) in LinkTx and LinkRx, and the link under a channel that injects faults
(``sim/channel.py``)."""

import json
import re

import numpy as np
import pytest

from linkcodec.bundled import bundled_files
from linkcodec.cli import main
from linkcodec.golden.link import (FlitError, FlitHeader, FlitReader, LinkFormat, deal,
                                   flit_sequence, flits_from_frames, frames_from_flits,
                                   numbered, seal)
from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from linkcodec.rtl.link import LinkRx, LinkTx, link_tables
from linkcodec.rtl.payload import word_layout
from linkcodec.rtl.retry import RetryRx, RetryTx
from linkcodec.sim.channel import (CHANNEL_FAULTS, CONFIG_COUNT, CONFIG_KINDS, CONFIG_RATE,
                                   CONFIG_SEED, shared_faulty_link)
from linkcodec.sim.faults import crc_good
from linkcodec.sim.harness import first_mismatch, run_beats
from linkcodec.rtl.blocks import get_block
from linkcodec.sim.link import flits_of_words, link_io, retry_run, words_of_flits

FILES = [path for path in bundled_files(kind="ffn1_act", layers=[0])]


def _cli_tables():
    """The tables ``linkcodec sim link`` fits on FILES, so that the tests here and the
    command share one build of the faulty link."""
    block = get_block("qlc-encoder")
    arrays = [np.load(path).reshape(-1) for path in FILES]
    tables, _ = block.sim_tables(arrays, {name: None for name in block.sim_options})
    return link_tables("qlc", tables)


def _frames(seed, sizes=(0, 1, 700, 2600, 300, 4000)):
    rng = np.random.default_rng(seed)
    tensor = np.concatenate([np.load(path).reshape(-1) for path in FILES])
    frames = []
    for size in sizes:
        start = int(rng.integers(0, tensor.size - size + 1))
        frames.append(tensor[start:start + size])
    return frames


# -- golden ----------------------------------------------------------------------------

@pytest.mark.parametrize("flit_bytes", [64, 128, 256])
def test_sequence_byte_sits_before_the_crc_field(flit_bytes):
    plain = LinkFormat("qlc", flit_bytes=flit_bytes)
    fmt = LinkFormat("qlc", flit_bytes=flit_bytes, sequence="link")
    assert fmt.body_bytes == plain.body_bytes - 1 and plain.sequence_bytes == 0
    assert fmt.sequence_offset == flit_bytes - fmt.crc_bytes - 1
    assert fmt.sequence_offset == 4 + fmt.body_bytes           # right after the body
    frames = _frames(1, sizes=(0, 300, 1000))
    flits = flits_from_frames(fmt, frames)
    assert all(flit_sequence(fmt, flit) == 0 for flit in flits)
    for number in (0, 1, 255, 256, 257, 1000):
        flit = numbered(fmt, flits[1], number)
        assert flit_sequence(fmt, flit) == number % 256 and crc_good(flit)
        # Only the sequence byte and the CRC field change.
        changed = [k for k in range(flit_bytes) if flit[k] != flits[1][k]]
        assert set(changed) <= {fmt.sequence_offset, *range(flit_bytes - fmt.crc_bytes,
                                                              flit_bytes)}
    # A reader takes numbered flits as they are: the byte is not body.
    renumbered = [numbered(fmt, flit, index) for index, flit in enumerate(flits)]
    got = frames_from_flits(fmt, renumbered)
    assert [frame.tolist() for _, frame in got] == [frame.tolist() for frame in frames]
    # Without sequence the same byte is body: a set bit there is a pad bit set.
    reader = FlitReader(plain)
    raw = plain.flit(FlitHeader(codec=0, table=False, bank=0, last=True, stream=0,
                                count=0, bits=0))
    spoilt = bytearray(raw)
    spoilt[fmt.sequence_offset] = 1
    with pytest.raises(FlitError, match="pad bits are zero"):
        reader.read(seal(bytes(spoilt)))


def test_sequence_refusals():
    plain = LinkFormat("qlc")
    fmt = LinkFormat("qlc", sequence="link")
    for wrong in (1, True, "links"):
        with pytest.raises(ValueError, match="sequence must be None, 'link' or 'stream'"):
            LinkFormat("qlc", sequence=wrong)
    with pytest.raises(ValueError, match="has no sequence number"):
        numbered(plain, bytes(256), 0)
    with pytest.raises(ValueError, match="is 256 bytes, not 255"):
        numbered(fmt, bytes(255), 0)
    with pytest.raises(ValueError, match="is 256 bytes, not 64"):
        flit_sequence(fmt, bytes(64))
    with pytest.raises(ValueError, match="a sequence number is 0 or more, not -1"):
        numbered(fmt, bytes(256), -1)
    with pytest.raises(TypeError, match="sequence must be an integer"):
        numbered(fmt, bytes(256), 1.5)
    assert "sequence='link'" in repr(fmt) and "sequence" not in repr(plain)


# -- parameters ------------------------------------------------------------------------

@pytest.mark.parametrize("options,message", [
    ({"retry_depth": 3}, "retry_depth must be 0 .no retry. or one of 1, 2, 4"),
    ({"retry_depth": 256}, "retry_depth must be 0 .no retry. or one of"),
    ({"retry_depth": 16, "ack_latency": 0}, "ack_latency must be 1 to 65535 cycles, not 0"),
    ({"retry_depth": 16, "ack_latency": 65536}, "ack_latency must be 1 to 65535 cycles"),
])
def test_retry_parameters(options, message):
    for block in (LinkTx, LinkRx):
        with pytest.raises(ValueError, match=message):
            block(**options)
    with pytest.raises(ValueError, match="depth must be one of 1, 2, 4, 8, 16, 32, 64, 128"):
        RetryTx(flit_bytes=256, link_bytes=64, crc_bytes=4, depth=256, ack_latency=8)


def test_retry_ports_and_boundaries():
    for depth, latency in ((1, 1), (128, 65535)):           # the last valid values
        tx = LinkTx(retry_depth=depth, ack_latency=latency)
        rx = LinkRx(retry_depth=depth)
        assert "i_ack" in tx.signature.members and "o_ack" in rx.signature.members
        assert tx.format.sequence and rx.format.sequence
        assert tx.retry_depth == depth and tx.ack_latency == latency
        for block in (tx, rx):
            block._MustUse__silence = True
    plain = LinkTx()                        # no retry: numbered stream by stream
    plain._MustUse__silence = True
    assert "i_ack" not in plain.signature.members and plain.format.sequence == "stream"
    for block in (RetryTx(flit_bytes=64, link_bytes=64, crc_bytes=2, depth=1, ack_latency=1),
                  RetryRx(flit_bytes=64, link_bytes=8, crc_bytes=2)):
        block._MustUse__silence = True
    with pytest.raises(ValueError, match="link_bytes must be a power of two"):
        RetryRx(flit_bytes=64, link_bytes=128, crc_bytes=2)


# -- hardware --------------------------------------------------------------------------

@pytest.mark.slow
def test_pair_with_retry_numbers_its_flits(capsys):
    """``linkcodec sim link --retry-depth 4`` (no faults): LinkTx with retry sends the
    golden writer's flits, each numbered with its place in link order and its CRC mended
    (checked byte for byte, CRC field included, past number 255: about 400 flits), and
    LinkRx takes them: bit-exact under idle cycles and backpressure."""
    assert main(["sim", "link", "--codec", "qlc", "--streams", "2", "--json",
                 "--retry-depth", "4", "--ack-latency", "64", *map(str, FILES)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["bit_exact"] and report["tx_bit_exact"], report["seed"]
    assert report["flits"] > 256 and "faults_injected" not in report


@pytest.mark.xdist_group("link-retry-qlc")
def test_retry_survives_every_fault(seed):
    """With retry, faults of every kind (spoilt, lost, repeated and garbage flits, a
    stalled return channel) cost nothing: every frame out whole and once, bit-exact, no
    hang; every fault detected; LinkRx took exactly the flits a go-back-N receiver takes
    of what it got; every flit sent again was the same flit."""
    frames = _frames(seed)
    result = retry_run(frames, codec="qlc", streams=2, faults=36, seed=seed,
                       retry_depth=16, ack_latency=128, tables=_cli_tables())
    assert result["bit_exact"] and result["tx_bit_exact"], result["seed"]
    assert result["rx_model_exact"], result["seed"]
    assert result["faults_injected"] == 36, result
    assert all(result["faults"][kind]["injected"] == 6 for kind in CHANNEL_FAULTS), result
    assert result["faults_detected"] == 36, result["faults"]
    assert (result["frames_lost"], result["frames_duplicated"], result["symbols_wrong"],
            result["hangs"]) == (0, 0, 0, 0), result
    assert result["retries"] >= 6 and result["flits_sent"] > result["flits"]


@pytest.mark.xdist_group("link-retry-qlc")
def test_retry_survives_a_reset_in_mid_stream(seed):
    """Both ends (and the channel's flits) reset together in mid-stream, faults of every
    kind before and after: what went in after the reset comes out whole, once, in
    order. (The build of test_retry_survives_every_fault.)"""
    link = shared_faulty_link(codec="qlc", streams=2, flit_bytes=256, link_bytes=64,
                              tables=_cli_tables(), tables_in_band=True, retry_depth=16,
                              ack_latency=128, ack_delay=16)
    fmt = link.tx.format
    frames = deal(_frames(seed), 2)
    inputs, expected = link_io(fmt, frames)
    tensor = np.load(FILES[1]).reshape(-1)
    early, _ = link_io(fmt, [(0, tensor[:5000]), (1, tensor[5000:10000])])
    config = {"i_config": [{"addr": CONFIG_SEED, "data": seed or 1},
                           {"addr": CONFIG_COUNT, "data": 40},
                           {"addr": CONFIG_RATE, "data": 1},
                           {"addr": CONFIG_KINDS, "data": (1 << len(CHANNEL_FAULTS)) - 1}]}
    result = run_beats(link, inputs=inputs, expected=expected, idle="random",
                       stall="random", name="link_retry_qlc_s2_f256_w64_d16_a128_c16",
                       config=config, seed=seed, before_reset=(early, 1500),
                       watch={"faults": link.channel.faults.payload.shape()})
    assert result["bit_exact"], (result["seed"], first_mismatch(result))
    assert sum(result["taken_before_reset"].values()) > 0
    assert len(result["watched"]["faults"]) > 0, result["seed"]


@pytest.mark.xdist_group("link-retry-qlc-alone")
@pytest.mark.parametrize("kinds", [("drop",), ("duplicate",), ("stall",)])
def test_retry_each_fault_alone(seed, kinds):
    """Faults of one kind at a time, many: a lost flit is sent again (the next one's
    number gives it away, or for the last, the timeout); a repeated one is dropped; a
    return channel that stalls longer than the ack latency makes the sender go back on
    its own, and nothing is lost. (Without the sequence check in RetryRx, the lost and
    repeated flits come out short or twice: checked by hand.)"""
    frames = _frames(seed, sizes=(2000, 3000, 500, 2500))
    result = retry_run(frames, codec="qlc", streams=2, faults=10, seed=seed,
                       retry_depth=16, ack_latency=128, kinds=kinds)
    assert result["bit_exact"] and result["rx_model_exact"], result["seed"]
    assert result["faults_injected"] == 10 == result["faults_detected"], result
    assert (result["frames_lost"], result["frames_duplicated"], result["symbols_wrong"],
            result["hangs"]) == (0, 0, 0, 0), result
    if kinds != ("duplicate",):
        assert result["retries"] >= 1, result


@pytest.mark.xdist_group("link-retry-qlc")
def test_sim_link_with_retry_command(capsys, monkeypatch):
    """``linkcodec sim link --inject-faults N`` runs the link with retry and reports the
    issue's keys, with the retry options passed on (each file's first 3,000 symbols: the
    build of the tests above)."""
    from linkcodec.sim import link

    whole = link.retry_run
    seen = {}

    def short(frames, **options):
        seen.update(options)
        return whole([frame[:3000] for frame in frames], **options)

    monkeypatch.setattr(link, "retry_run", short)
    code = main(["sim", "link", "--codec", "qlc", "--streams", "2", "--json",
                 "--inject-faults", "24", "--retry-depth", "16", "--ack-latency", "128",
                 *map(str, FILES)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    assert seen["retry_depth"] == 16 and seen["ack_latency"] == 128
    for key in ("faults_injected", "faults_detected", "retries", "hangs", "frames_lost",
                "frames_duplicated", "symbols_wrong", "latency_cycles"):
        assert key in report, key
    assert report["faults_injected"] == 24 == report["faults_detected"], report["seed"]
    assert report["bit_exact"] and report["tx_bit_exact"] and report["rx_model_exact"]
    assert (report["frames_lost"], report["frames_duplicated"], report["symbols_wrong"],
            report["hangs"]) == (0, 0, 0, 0), report["seed"]


class _RetryPair(wiring.Component):
    """RetryTx driving RetryRx directly, its acks back: words in, words out."""

    def __init__(self, flit_bytes, link_bytes, crc_bytes, depth):
        self.tx = RetryTx(flit_bytes=flit_bytes, link_bytes=link_bytes, crc_bytes=crc_bytes,
                          depth=depth, ack_latency=64)
        self.rx = RetryRx(flit_bytes=flit_bytes, link_bytes=link_bytes, crc_bytes=crc_bytes)
        layout = word_layout(8 * link_bytes)
        super().__init__({"i": In(stream.Signature(layout)),
                          "o": Out(stream.Signature(layout))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.tx, m.submodules.rx = self.tx, self.rx
        wiring.connect(m, wiring.flipped(self.i), self.tx.i)
        wiring.connect(m, self.tx.o, self.rx.i)
        wiring.connect(m, self.rx.o, wiring.flipped(self.o))
        m.d.comb += self.tx.i_ack.eq(self.rx.o_ack)
        return m


def test_retry_blocks_drive_each_other(seed):
    """RetryTx drives RetryRx directly: 600 flits (64 bytes, a word each; their numbers
    wrap twice) come out in order, each numbered with its place and sealed, under idle
    cycles and backpressure, with a buffer of 2 flits (the sender waits for acks)."""
    fmt = LinkFormat("qlc", flit_bytes=64, sequence="link")
    rng = np.random.default_rng(seed)
    flits = [seal(rng.integers(0, 256, 61, dtype=np.uint8).tobytes() + bytes(3))
             for _ in range(600)]
    want = [numbered(fmt, flit, index) for index, flit in enumerate(flits)]
    pair = _RetryPair(64, 64, fmt.crc_bytes, 2)
    result = run_beats(pair, inputs={"i": words_of_flits(flits, 64)},
                       expected={"o": words_of_flits(want, 64)}, idle="random",
                       stall="random", seed=seed, name="retry_pair_f64_w64_d2")
    assert result["bit_exact"], (result["seed"], first_mismatch(result))
    assert flits_of_words(result["output"]["o"], 64, 64) == want


def test_sim_link_refuses_bad_retry_options(capsys):
    for argv, message in (
            (["--ack-latency", "9"], "--ack-latency goes with --retry-depth FLITS or "
                                     "--inject-faults N"),
            (["--retry-depth", "3"], "retry_depth must be 0 .no retry. or one of"),
            (["--no-retry"], "--no-retry goes with --inject-faults N"),
            (["--inject-faults", "3", "--no-retry", "--retry-depth", "16"],
             "--retry-depth is an option of the link with retry, not with --no-retry"),
            (["--inject-faults", "3", "--retry-depth", "3"],
             "retry_depth must be 0 .no retry. or one of"),
            (["--inject-faults", "0"], "1 or more, not 0")):
        assert main(["sim", "link", *argv, str(FILES[0])]) == 2, argv
        assert re.search(message, capsys.readouterr().err), argv


# -- proofs (sim/formal.py): stream rules, by BMC ---------------------------------------

def _retry_block(kind):
    """The retry block ``kind`` (``"tx"`` or ``"rx"``) at a small shape (64-byte flits of
    eight 8-byte words)."""
    if kind == "tx":
        return RetryTx(flit_bytes=64, link_bytes=8, crc_bytes=2, depth=2, ack_latency=6)
    return RetryRx(flit_bytes=64, link_bytes=8, crc_bytes=2)


def _retry_blocks():
    """Both retry blocks, :func:`_retry_block`'s."""
    return _retry_block("tx"), _retry_block("rx")


@pytest.mark.parametrize("kind", ["tx", "rx"])
def test_retry_blocks_keep_the_stream_rules(kind, tmp_path):
    """Proven for 24 cycles (three flits' words), any input and any acks: ``o``'s valid
    and payload hold until ready, nothing goes out before an input; RetryRx ends no more
    flits than came in (RetryTx may send one again: no such count), and its input's
    ready never follows its output's (both, by a miter)."""
    from linkcodec.sim.formal import ReadyMiter, StreamRules, run_sby

    tx, rx = _retry_blocks()
    block = tx if kind == "tx" else rx
    free = ("i_ack",) if kind == "tx" else ()
    result = run_sby(StreamRules(block, free_ports=free, frames=kind == "rx"),
                     tmp_path / "rules", depth=24, cover_depth=24)
    assert result.passed, result.log[-3000:]
    a, b = _retry_blocks(), _retry_blocks()
    index = 0 if kind == "tx" else 1
    for spare in (a[1 - index], b[1 - index], (tx, rx)[1 - index]):
        spare._MustUse__silence = True
    result = run_sby(ReadyMiter(a[index], b[index], free_ports=free), tmp_path / "miter",
                     depth=12)
    assert result.passed, result.log[-3000:]


@pytest.mark.parametrize("kind", ["tx", "rx"])
def test_retry_ready_follows_neither_payload_nor_output_in_any_state(kind, tmp_path):
    """As the docstrings promise, in every state: the netlist has no combinational path
    from ``i.payload`` or ``o.ready`` to ``i.ready``."""
    from linkcodec.sim.formal import netlist_paths

    assert netlist_paths(_retry_block(kind), tmp_path, ["i__payload", "o__ready"],
                         ["i__ready"]) == []


@pytest.mark.parametrize("kind", ["link-tx", "link-rx"])
def test_generate_with_retry_lints_clean(kind, tmp_path, capsys):
    """``linkcodec generate link-tx|link-rx --retry-depth D [--ack-latency C]`` writes
    Verilog with the return channel's port that Verilator's lint passes; module names
    say the retry (``_r16``, and the sender's ``_a100``); the options are checked."""
    from test_generate import lint

    assert main(["generate", kind, "--retry-depth", "16", "--ack-latency", "100", "-o",
                 str(tmp_path)]) == 0
    module = (f"linkcodec_{kind.replace('-', '_')}_qlc_s1_l1_r16"
              + ("_a100" if kind == "link-tx" else ""))
    assert capsys.readouterr().out.split() == [str(tmp_path / f"{module}.v"),
                                               str(tmp_path / f"{module}.vlt")]
    result = lint([tmp_path / f"{module}.vlt", tmp_path / f"{module}.v"])
    assert result.returncode == 0 and not result.stderr, result.stderr[:2000]
    port = "input [9:0] i_ack;" if kind == "link-tx" else "output [9:0] o_ack;"
    assert port in (tmp_path / f"{module}.v").read_text()
    for argv, message in (
            (["--ack-latency", "9"], "--ack-latency goes with --retry-depth FLITS"),
            (["--retry-depth", "3"], "retry_depth must be 0 .no retry. or one of")):
        assert main(["generate", kind, *argv, "-o", str(tmp_path)]) == 2, argv
        assert re.search(message, capsys.readouterr().err), argv
