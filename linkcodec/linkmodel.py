"""``linkcodec link``: what a link of G Gb/s gains from a codec at a clock of F MHz.

``linkcodec link --gbps G --clock-mhz F [--codec qlc|huffman|exponent] [--streams K]
[--lanes N] [--flit-bytes B] [--json] [FILE...]`` answers from measured figures only:

- **How much the flits carry.** The FILEs' tensors (one frame a tensor) are coded into
  link flits by the golden model (:mod:`linkcodec.golden.link`, ``docs/link.md``), with
  the tables fitted to all the FILEs the way ``linkcodec sim`` fits them (the block
  description's ``fitted_tables``). Without FILEs, the bundled sample of the codec's
  format (e4m3 for QLC and Huffman, bf16 for the exponent remap), single-stage as a link
  runs: per tensor class, tables fitted to steps 0-2, step 3 coded. The figure is
  ``link_bytes_per_symbol``: every byte of every flit (headers, CRC fields, padding, the
  table flits) over the symbols carried; a raw symbol is 1 byte (e4m3) or 2 (bf16).
- **How fast a stream codes.** A stream is an encoder and its decoder in series; its
  symbols per cycle are the smaller of theirs, its latency the sum, its Fmax the smaller.
  The figures are in :data:`MEASURED`, each with the command that measured it.
- **The wire.** G Gb/s carries G/8 GB/s of flits, so the wire limits the symbols to
  ``G/8 GB/s / link_bytes_per_symbol``; the codecs limit them to ``streams x
  symbols/cycle x F`` and, on the link hardware (:data:`LINK_HARDWARE`), to what
  ``LinkTx``'s link side moves (``link_side_bytes x F / link_bytes_per_symbol``). The link
  runs at the smallest. The answer is that rate as raw data
  (Gb/s of the symbols uncoded) and its gain over G, which side limits, how many streams
  keep up with the wire at F, the latency added and whether F is above the Fmax the ECP5
  flow reached.

:func:`link_model` is the arithmetic alone (pure: every figure is an argument);
:func:`measure_link` codes the files; :func:`link_overhead_rows` is the flit overhead
per tensor class and codec on the bundled sample (``linkcodec bench --link``).
"""

import json
import math
from typing import NamedTuple

import numpy as np

from .bundled import KINDS, bundled_bf16_files, bundled_files
from .golden.link import (
    DEFAULT_FLIT_BYTES,
    FLIT_BYTES,
    MAX_STREAMS,
    FlitWriter,
    LinkFormat,
    LinkStats,
    deal,
    link_stats,
)
from .rtl.link import LINK_PIECE_BYTES

__all__ = [
    "BLOCKS_OF",
    "CODECS",
    "LINK_HARDWARE",
    "LINK_PARTS",
    "LinkHardware",
    "MEASURED",
    "LinkSample",
    "Part",
    "StreamFigures",
    "add_arguments",
    "figures_for",
    "format_answer",
    "link_model",
    "link_overhead_rows",
    "measure_link",
    "render_link_overhead",
    "render_measured",
    "run",
    "stream_figures",
]

#: The codecs a link carries, with the encoder and decoder blocks of one stream.
BLOCKS_OF = {
    "qlc": ("qlc-encoder", "qlc-decoder"),
    "huffman": ("huffman-encoder", "huffman-decoder"),
    "exponent": ("exponent-encoder", "exponent-decoder"),
}
CODECS = tuple(BLOCKS_OF)
#: How the modelled link numbers its flits: as LinkTx and LinkRx by default, without retry
#: (stream by stream, a byte a flit; retry's figures add their own costs below).
LINK_SEQUENCE = "stream"
#: Lanes a stream has unless told otherwise (the blocks' fewest).
DEFAULT_LANES = {"qlc": 1, "huffman": 1, "exponent": 4}


class Part(NamedTuple):
    """One measured block of a stream: its figures and, in ``commands``, the command that
    measured each (``{figure: command}``)."""

    block: str
    lanes: int
    symbols_per_cycle: float
    latency_cycles: int
    fmax_mhz: float
    luts: int
    commands: dict


class StreamFigures(NamedTuple):
    """What one stream does: the parts in series (``symbols_per_cycle`` the smallest,
    ``latency_cycles`` the sum, ``fmax_mhz`` the smallest) and the parts themselves."""

    symbols_per_cycle: float
    latency_cycles: float
    fmax_mhz: float
    parts: tuple = ()


def stream_figures(parts):
    """:class:`StreamFigures` of ``parts`` (:class:`Part`) in series."""
    parts = tuple(parts)
    if not parts:
        raise ValueError("a stream needs at least one measured part")
    slowest = min(parts, key=lambda part: part.symbols_per_cycle)
    return StreamFigures(symbols_per_cycle=slowest.symbols_per_cycle,
                         latency_cycles=sum(part.latency_cycles for part in parts),
                         fmax_mhz=min(part.fmax_mhz for part in parts), parts=parts)


# Where the figures come from: the results table (`linkcodec bench --synthesis`,
# docs/results.md, its rows in linkcodec/data/results.json, each measured on the Verilog
# the code makes now: tests/test_results.py). Symbols per cycle: the no-stall run `linkcodec
# report` simulates on the tensor below; latency: the block's `latency` property, which
# the contract suite measures (check_latency); Fmax (the median of nextpnr seeds 1-3) and
# LUTs: ECP5 LFE5U-85F speed 6, out of context.
_E4M3_SAMPLE = "linkcodec/data/minilm_l3_ffn2_act_s0.npy"
_BF16_SAMPLE = "linkcodec/data/minilm_bf16_l4_ffn2_act_s0.npy"


def _part(block, lanes, sample):
    from .results import SEEDS, table_row

    row = table_row(block, lanes)
    lanes_option = "" if lanes == min(DEFAULT_LANES.values()) else f" --lanes {lanes}"
    report = f"linkcodec report {block}{lanes_option} --seeds {SEEDS}"
    return Part(block, lanes, row["symbols_per_cycle"], row["latency_cycles"],
                round(row["fmax_mhz"], 1), row["luts"], {
                    "symbols_per_cycle": f"linkcodec sim {block}{lanes_option} --json {sample}",
                    "latency_cycles": report, "fmax_mhz": report, "luts": report})


#: Measured figures of each codec's stream, by ``(codec, lanes)``: the encoder and the
#: decoder, each a :class:`Part` with the command beside every figure. A codec at lanes
#: not listed here has no measured figures (measure them and add an entry).
def _from_table(make):
    """``make()``, or ``{}`` while the results table is missing or lacks a row (then
    :func:`figures_for` says that nothing is measured)."""
    try:
        return make()
    except LookupError:
        return {}


MEASURED = _from_table(lambda: {
    ("qlc", 1): (_part("qlc-encoder", 1, _E4M3_SAMPLE), _part("qlc-decoder", 1, _E4M3_SAMPLE)),
    ("huffman", 1): (_part("huffman-encoder", 1, _E4M3_SAMPLE),
                     _part("huffman-decoder", 1, _E4M3_SAMPLE)),
    ("exponent", 4): (_part("exponent-encoder", 4, _BF16_SAMPLE),
                      _part("exponent-decoder", 4, _BF16_SAMPLE)),
})

#: The link's own blocks (LinkTx, LinkRx), in series with every codec's stream: empty
#: until they are measured; each joins as a :class:`Part` (its symbols per cycle,
#: latency and Fmax count as a codec block's do).
LINK_PARTS = ()


class LinkHardware(NamedTuple):
    """``LinkTx`` driving ``LinkRx`` as measured at ``streams`` streams: a stream's
    ``symbols_per_cycle`` (the link's over ``streams``, no stalls, the bundled sample's step
    3) and ``latency_cycles`` (the longest any symbol took from ``LinkTx``'s input to
    ``LinkRx``'s output: the flit's fill, the encoder, the link and the decoder, all
    counted), in simulation; ``fmax_mhz`` (the slower of the two) and ``luts`` (both) from
    the results table, at ``synthesis_streams``, the widest shape it holds; and the
    ``commands`` that measured them. ``link_side_bytes`` is the most flit bytes ``LinkTx``
    puts on its link a cycle, whatever the streams do: its link side moves a row of
    :data:`~linkcodec.rtl.link.LINK_PIECE_BYTES` a cycle (rtl/link/)."""

    streams: int
    symbols_per_cycle: float
    latency_cycles: int
    fmax_mhz: float
    luts: int
    commands: dict
    link_side_bytes: int = LINK_PIECE_BYTES
    synthesis_streams: int = None


def _link_hardware(codec, *, streams, symbols_per_cycle, latency_cycles):
    """A :class:`LinkHardware` whose cycles were simulated at ``streams`` and whose Fmax
    and LUTs are the results table's widest ``LinkTx`` and ``LinkRx`` of ``codec``."""
    from .results import LINK_SHAPES, SEEDS, table_row

    widest = max(count for _, name, count in LINK_SHAPES if name == codec)
    rows = [table_row(kind, 1, codec=codec, streams=widest) for kind in ("link-tx", "link-rx")]
    report = f"linkcodec report link-tx link-rx --codec {codec} --streams {widest} --seeds {SEEDS}"
    simulated = f"linkcodec report link-rx --codec {codec} --streams {streams}"
    return LinkHardware(
        streams=streams, symbols_per_cycle=symbols_per_cycle, latency_cycles=latency_cycles,
        fmax_mhz=round(min(row["fmax_mhz"] for row in rows), 1),
        luts=sum(row["luts"] for row in rows), synthesis_streams=widest,
        commands={"symbols_per_cycle": simulated, "latency_cycles": simulated,
                  "fmax_mhz": report, "luts": report})


#: The link hardware's measured figures by ``(codec, lanes, flit_bytes)``; where an entry
#: is, ``linkcodec link`` takes a stream's rate, the latency and Fmax from it instead of
#: from the codec blocks and the fill estimate. 16 streams of 1-lane QLC with tables in
#: band and the CRC: 15.714 symbols a cycle over the 16 streams and 1,003 cycles at most,
#: as its simulation (`link_throughput`) measured them.
LINK_HARDWARE = _from_table(lambda: {
    ("qlc", 1, 256): _link_hardware("qlc", streams=16, symbols_per_cycle=0.9821,
                                    latency_cycles=1003),
})


def render_measured(measured=None):
    """:data:`MEASURED` as a Markdown table, a row a block, each figure's command beside."""
    from .tables import markdown_table

    measured = MEASURED if measured is None else measured
    rows = []
    for (codec, _), parts in measured.items():
        for part in parts:
            commands = part.commands
            rows.append([codec, f"`{part.block}`", str(part.lanes),
                         f"{part.symbols_per_cycle}", str(part.latency_cycles),
                         f"{part.fmax_mhz}",
                         f"`{commands['symbols_per_cycle']}`; `{commands['fmax_mhz']}`"])
    return markdown_table(["codec", "block", "lanes", "symbols/cycle", "latency (cycles)",
                           "Fmax (MHz)", "measured by"], rows, align="lllrrrl")


def figures_for(codec, lanes=None):
    """:class:`StreamFigures` of one stream of ``codec`` at ``lanes`` (default: its
    fewest) with the link's own parts, from :data:`MEASURED`."""
    if codec not in BLOCKS_OF:
        raise ValueError(f"codec must be one of {', '.join(CODECS)}, not {codec!r}")
    lanes = DEFAULT_LANES[codec] if lanes is None else lanes
    if (codec, lanes) not in MEASURED:
        have = ", ".join(str(n) for c, n in MEASURED if c == codec)
        raise ValueError(f"no measured figures for {codec} at {lanes} lanes (measured: "
                         f"lanes {have or 'none'}); measure them (`linkcodec bench "
                         f"--synthesis`, docs/results.md) and add them to MEASURED")
    return stream_figures(MEASURED[codec, lanes] + tuple(LINK_PARTS))


# -- how much the flits carry ---------------------------------------------------------------

class LinkSample(NamedTuple):
    """What coding some tensors into flits cost: ``stats`` (:class:`LinkStats`, summed),
    ``source`` (what was coded, in words), ``link_bytes_per_symbol`` and
    ``raw_bytes_per_symbol``."""

    stats: LinkStats
    source: str
    link_bytes_per_symbol: float
    raw_bytes_per_symbol: int


def _block(codec):
    from .rtl.blocks import get_block

    return get_block(BLOCKS_OF[codec][0])


def _flit_stats(fmt, tables, frames):
    """:class:`LinkStats` of ``frames`` dealt round robin to the link's streams after the
    table flits of ``tables``."""
    writer = FlitWriter(fmt)
    flits = writer.load(tables)
    for stream, frame in deal(frames, fmt.streams):
        flits += writer.frame(frame, stream)
    return link_stats(fmt, flits, frames, tables)


def _sum_stats(stats):
    return LinkStats(*(sum(values) for values in zip(*stats)))


def _sample(stats, source, fmt):
    if stats.symbols == 0:
        raise ValueError("the FILEs hold no symbols to carry")
    return LinkSample(stats, source, stats.link_bytes / stats.symbols, fmt.symbol_bytes)


def bundled_class(codec, kind):
    """``(earlier, later)``: steps 0-2 and step 3 of one tensor class of the bundled sample
    in the codec's format, each a list of flat arrays."""
    find = bundled_bf16_files if codec == "exponent" else bundled_files

    def load(steps):
        return [np.load(path).reshape(-1) for path in find(kind=kind, steps=steps)]

    return load((0, 1, 2)), load((3,))


def _read_frames(codec, files):
    from .inputs import FormatError, read_shards

    shards = read_shards(files, format="bf16" if codec == "exponent" else "e4m3")
    want = "bf16" if codec == "exponent" else "e4m3"
    for shard in shards:
        if shard.format != want:
            held = "bf16 values (uint16)" if shard.format == "bf16" else "e4m3 bytes (uint8)"
            carries = ("bf16 values (uint16 bit patterns or floats)" if want == "bf16"
                       else "e4m3 bytes (uint8 bit patterns or floats)")
            raise FormatError(f"{shard.file}:{shard.tensor} holds {held}; the {codec} "
                              f"link carries {carries}")
    return [shard.symbols for shard in shards]


def measure_link(codec, files=None, *, streams=1, flit_bytes=DEFAULT_FLIT_BYTES):
    """:class:`LinkSample` of ``files`` (one frame a tensor; tables fitted to all of them,
    as ``linkcodec sim`` fits them) coded into the flits of a ``codec`` link, or, with no
    files, of the bundled sample single-stage (per tensor class, tables from steps 0-2,
    step 3 coded)."""
    fmt = LinkFormat(codec, streams=streams, flit_bytes=flit_bytes, sequence=LINK_SEQUENCE)
    block = _block(codec)
    if files:
        frames = _read_frames(codec, files)
        stats = _flit_stats(fmt, block.fitted_tables(frames), frames)
        return _sample(stats, f"{len(frames)} tensors of {len(files)} files, tables fitted "
                              "to all of them", fmt)
    stats = []
    for kind in KINDS:
        earlier, later = bundled_class(codec, kind)
        stats.append(_flit_stats(fmt, block.fitted_tables(earlier), later))
    form = "bf16" if codec == "exponent" else "e4m3"
    return _sample(_sum_stats(stats), f"the bundled {form} sample: step 3 of every tensor "
                                      "class, tables fitted to steps 0-2", fmt)


# -- the model --------------------------------------------------------------------------------

def _positive(value, option):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 \
            or not math.isfinite(value):
        raise ValueError(f"{option} must be a number more than 0, not {value!r}")
    return float(value)


def _as_figures(figures):
    if isinstance(figures, StreamFigures):
        return figures
    if isinstance(figures, dict):
        return StreamFigures(figures["symbols_per_cycle"], figures["latency_cycles"],
                             figures["fmax_mhz"], tuple(figures.get("parts", ())))
    return stream_figures(figures)


#: Relative slack when comparing rates, so that a stream count that exactly matches the
#: wire counts as keeping up despite rounding.
_SLACK = 1e-9


#: Cycles RetryTx adds to a flit's last word (rtl/retry.py: buffer write, then read), and
#: the link word (bytes) of the hardware the retry figures take: LinkTx's default.
RETRY_TX_CYCLES = 2
RETRY_WORD_BYTES = 64


def link_model(*, gbps, clock_mhz, link_bytes_per_symbol, raw_bytes_per_symbol, codec="qlc",
               streams=1, lanes=None, flit_bytes=DEFAULT_FLIT_BYTES, figures=None):
    """What a link gains: a dict of every input and figure of the answer.

    ``gbps``: the wire's rate of flit bits (G); ``clock_mhz``: the codecs' clock (F);
    ``link_bytes_per_symbol`` and ``raw_bytes_per_symbol``: from :func:`measure_link`;
    ``figures``: one stream's figures (a :class:`StreamFigures`, a dict of its fields, or
    :class:`Part` objects in series) instead of :func:`figures_for` ``(codec, lanes)``.

    Latency counts, for the first symbol of a flit: the stream's codec latency (encoder
    plus decoder, first input to first output, no stalls), the flit's *fill* (the stream
    codes the flit's other symbols, ``flit_bytes / link_bytes_per_symbol`` of them on
    average, before the header, which holds their count and bits, can go) and its
    *serialisation* (``8 flit_bytes / G``: the receiver checks a whole flit before it
    decodes it). It does not count the PHY, the flight time, waiting for the wire when the
    wire limits, or the link's own blocks until :data:`LINK_PARTS` holds them."""
    gbps = _positive(gbps, "--gbps")
    clock_mhz = _positive(clock_mhz, "--clock-mhz")
    link_bytes_per_symbol = _positive(link_bytes_per_symbol, "link_bytes_per_symbol")
    if codec not in BLOCKS_OF:
        raise ValueError(f"codec must be one of {', '.join(CODECS)}, not {codec!r}")
    if isinstance(streams, bool) or not isinstance(streams, int) \
            or not 1 <= streams <= MAX_STREAMS:
        raise ValueError(f"--streams must be 1..{MAX_STREAMS} (the flit header's stream "
                         f"field), not {streams!r}")
    if flit_bytes not in FLIT_BYTES:
        raise ValueError(f"--flit-bytes must be one of {', '.join(map(str, FLIT_BYTES))}, "
                         f"not {flit_bytes!r}")
    lanes = DEFAULT_LANES[codec] if lanes is None else lanes
    hardware = LINK_HARDWARE.get((codec, lanes, flit_bytes)) if figures is None else None
    if hardware is not None:
        stream = StreamFigures(hardware.symbols_per_cycle, hardware.latency_cycles,
                               hardware.fmax_mhz, ())
    else:
        stream = figures_for(codec, lanes) if figures is None else _as_figures(figures)

    raw_bits = 8 * raw_bytes_per_symbol
    wire_symbols = gbps * 1e9 / 8 / link_bytes_per_symbol          # symbols/s
    per_stream = stream.symbols_per_cycle * clock_mhz * 1e6         # symbols/s
    # The link hardware's link side moves at most link_side_bytes of flits a cycle, so
    # its symbols are limited there too, whatever the streams: no count of streams keeps
    # up with a wire faster than that.
    side_symbols = (math.inf if hardware is None else
                    hardware.link_side_bytes * clock_mhz * 1e6 / link_bytes_per_symbol)
    codec_symbols = min(streams * per_stream, side_symbols)
    wire_limits = codec_symbols >= wire_symbols * (1 - _SLACK)
    effective = min(wire_symbols, codec_symbols)
    side_keeps_up = side_symbols >= wire_symbols * (1 - _SLACK)
    keep_up = (max(1, math.ceil(wire_symbols / per_stream * (1 - _SLACK))) if side_keeps_up
               else None)

    symbols_per_flit = flit_bytes / link_bytes_per_symbol
    # The hardware's measured latency counts the fill already.
    fill_cycles = 0.0 if hardware else symbols_per_flit / stream.symbols_per_cycle
    serialisation_ns = 8 * flit_bytes / gbps
    cycle_ns = 1e3 / clock_mhz
    latency_ns = (stream.latency_cycles + fill_cycles) * cycle_ns + serialisation_ns

    # Retry (go-back-N, rtl/retry.py), at the link hardware's 64-byte word: RetryTx
    # and RetryRx each hold a flit until it is whole (LinkTx's words come a few cycles
    # apart, RetryTx sends them back to back): RETRY_TX_CYCLES + a flit's words + 1, the
    # blocks' own pipeline (the shorter body also cuts flits elsewhere, which moves the
    # worst symbol's latency either way: docs/link.md, "Retry"); a flit sent again pays
    # the round trip:
    # RetryRx's nak (1 cycle), RetryTx sees it (1), finishes the flit it is sending (up
    # to a flit's words), goes back (1) and reads the buffer (1), and the flit crosses
    # the wire again, checked whole.
    words = flit_bytes // RETRY_WORD_BYTES
    retry_cycles = RETRY_TX_CYCLES + words + 1
    round_trip_cycles = 1 + 1 + words + 1 + 1
    round_trip_ns = round_trip_cycles * cycle_ns + serialisation_ns

    raw_gbps = effective * raw_bits / 1e9
    # What the same wire carries in raw flits, uncoded: the body's whole symbols.
    body_bytes = LinkFormat(codec, flit_bytes=flit_bytes, sequence=LINK_SEQUENCE).body_bytes
    raw_flit_gbps = gbps * (body_bytes // raw_bytes_per_symbol) * raw_bytes_per_symbol \
        / flit_bytes
    return {
        "gbps": gbps,
        "clock_mhz": clock_mhz,
        "codec": codec,
        "lanes": lanes,
        "streams": streams,
        "flit_bytes": flit_bytes,
        "link_bytes_per_symbol": link_bytes_per_symbol,
        "raw_bytes_per_symbol": raw_bytes_per_symbol,
        "stream_symbols_per_cycle": stream.symbols_per_cycle,
        "stream_latency_cycles": stream.latency_cycles,
        "stream_fmax_mhz": stream.fmax_mhz,
        "wire_msymbols_per_s": wire_symbols / 1e6,
        "streams_msymbols_per_s": streams * per_stream / 1e6,
        "link_side_msymbols_per_s": None if hardware is None else side_symbols / 1e6,
        "codec_msymbols_per_s": codec_symbols / 1e6,
        "effective_msymbols_per_s": effective / 1e6,
        "effective_raw_gbps": raw_gbps,
        "gain": raw_gbps / gbps,
        "wire_gain": raw_bytes_per_symbol / link_bytes_per_symbol,
        "raw_flits_gbps": raw_flit_gbps,
        "limited_by": "wire" if wire_limits else "codecs",
        "streams_to_keep_up": keep_up,
        "keep_up_within_streams": keep_up is not None and keep_up <= MAX_STREAMS,
        "latency": {
            "codec_cycles": stream.latency_cycles,
            "fill_cycles": fill_cycles,
            "symbols_per_flit": symbols_per_flit,
            "serialisation_ns": serialisation_ns,
            "serialisation_cycles": serialisation_ns / cycle_ns,
            "total_ns": latency_ns,
            "total_cycles": latency_ns / cycle_ns,
            "retry_cycles": retry_cycles,
            "with_retry_ns": latency_ns + retry_cycles * cycle_ns,
            "retry_round_trip_cycles": round_trip_cycles,
            "retry_round_trip_ns": round_trip_ns,
        },
        "above_fmax": clock_mhz > stream.fmax_mhz,
        "parts": [part._asdict() for part in stream.parts],
        "hardware": None if hardware is None else hardware._asdict(),
    }


def format_answer(answer, sample=None):
    """The answer of :func:`link_model` as the lines ``linkcodec link`` prints."""
    a = answer
    raw_bits = 8 * a["raw_bytes_per_symbol"]
    unit = "values" if a["codec"] == "exponent" else "symbols"
    lines = [(f"link {a['gbps']:g} Gb/s, {a['flit_bytes']}-byte flits; {a['codec']}, "
              f"{a['streams']} stream{'s' * (a['streams'] != 1)} of {a['lanes']} "
              f"lane{'s' * (a['lanes'] != 1)} at {a['clock_mhz']:g} MHz")]
    if sample is not None:
        stats = sample.stats
        lines.append(f"  coded: {sample.source}; {stats.symbols:,} {unit} in "
                     f"{stats.flits:,} flits ({stats.raw_flits:,} raw, {stats.table_flits} "
                     f"of tables)")
    lines += [
        (f"  flits: {a['link_bytes_per_symbol']:.4f} link bytes a {unit[:-1]} (headers, "
         f"CRC fields, padding and table flits counted) against "
         f"{a['raw_bytes_per_symbol']} raw: the wire carries {a['wire_gain']:.3f}x its "
         "rate in raw data"),
        (f"  wire:   {a['gbps']:g} Gb/s / 8 / {a['link_bytes_per_symbol']:.4f} = "
         f"{a['wire_msymbols_per_s']:,.1f} M{unit}/s"),
        (f"  codecs: {a['streams']} x {a['stream_symbols_per_cycle']:g} {unit}/cycle x "
         f"{a['clock_mhz']:g} MHz = {a['streams_msymbols_per_s']:,.1f} M{unit}/s"),
    ]
    hardware = a.get("hardware")
    if hardware:
        lines.append(
            f"  LinkTx's link side: {hardware['link_side_bytes']} bytes/cycle x "
            f"{a['clock_mhz']:g} MHz / {a['link_bytes_per_symbol']:.4f} = "
            f"{a['link_side_msymbols_per_s']:,.1f} M{unit}/s (a flit row a cycle, whatever "
            "the streams)")
    lines += [
        (f"effective: {a['effective_raw_gbps']:,.2f} Gb/s of raw data ({raw_bits} bits a "
         f"{unit[:-1]}), {a['gain']:.3f}x the wire's {a['gbps']:g} Gb/s; the "
         f"{'wire limits' if a['limited_by'] == 'wire' else 'codecs limit'}"
         + (" (at LinkTx's link side)" if a["limited_by"] == "codecs"
            and a["codec_msymbols_per_s"] < a["streams_msymbols_per_s"] else "")),
        (f"  (raw flits alone, uncoded, carry {a['raw_flits_gbps']:,.2f} Gb/s of raw data"
         + ("; coding gains nothing at this clock and stream count)"
            if a["effective_raw_gbps"] <= a["raw_flits_gbps"] else ")")),
    ]
    keep = a["streams_to_keep_up"]
    if keep is None:
        side_gbps = 8 * hardware["link_side_bytes"] * a["clock_mhz"] / 1e3
        lines.append(f"streams to keep up with the wire at {a['clock_mhz']:g} MHz: none "
                     f"(LinkTx's link side moves {hardware['link_side_bytes']} bytes a cycle, "
                     f"{side_gbps:,.1f} Gb/s of flits, against the wire's {a['gbps']:g}: a "
                     "wider link side or a faster clock)")
    else:
        lines.append(f"streams to keep up with the wire at {a['clock_mhz']:g} MHz: {keep}"
                     + ("" if a["keep_up_within_streams"] else
                        f" (more than the {MAX_STREAMS} a link carries: more lanes a stream "
                        "or a faster clock)"))
    lat = a["latency"]
    if hardware:
        lines.append(
            f"latency added: {lat['total_cycles']:,.1f} cycles = {lat['total_ns']:,.1f} ns at "
            f"{a['clock_mhz']:g} MHz: LinkTx to LinkRx {lat['codec_cycles']:g} cycles (the "
            f"longest a symbol took, its flit's fill and its turn on the link side included: "
            f"`{hardware['commands']['latency_cycles']}`) + serialisation "
            f"{lat['serialisation_ns']:,.2f} ns (one flit on the wire, checked whole); not "
            "counted: PHY, flight time, waiting for the wire")
        lines.append(f"  the link hardware's cycles measured at {hardware['streams']} streams; "
                     f"its Fmax and area at {hardware['synthesis_streams']}, the widest in "
                     f"docs/results.md: {hardware['fmax_mhz']:g} MHz, {hardware['luts']:,} "
                     f"LUTs (`{hardware['commands']['fmax_mhz']}`)")
    else:
        lines.append(f"latency added: {lat['total_cycles']:,.1f} cycles = {lat['total_ns']:,.1f} "
                 f"ns at {a['clock_mhz']:g} MHz: codecs {lat['codec_cycles']:g} cycles "
                 f"(encoder + decoder) + fill {lat['fill_cycles']:,.1f} cycles (the "
                 f"{lat['symbols_per_flit']:,.0f} {unit} of a flit coded before it goes) + "
                 f"serialisation {lat['serialisation_ns']:,.2f} ns (one flit on the wire, "
                 f"checked whole); not counted: PHY, flight time, queueing")
    lines.append(
        f"with retry (go-back-N): {lat['with_retry_ns']:,.1f} ns, {lat['retry_cycles']} "
        f"cycles more (RetryTx and RetryRx each hold a flit until it is whole: "
        f"{RETRY_TX_CYCLES} + a flit's words + 1); a flit sent again pays the retry round trip: "
        f"{lat['retry_round_trip_cycles']} cycles + serialisation = "
        f"{lat['retry_round_trip_ns']:,.1f} ns (nak, the flit being sent finished, the "
        f"buffer read, the flit on the wire again; not counted: the return channel's "
        f"flight)")
    if a["above_fmax"] and hardware:
        lines.append(f"note: {a['clock_mhz']:g} MHz is above the Fmax the ECP5 flow reached "
                     f"for the link hardware, {a['stream_fmax_mhz']:g} MHz at "
                     f"{hardware['synthesis_streams']} streams; the figures assume a faster "
                     "process keeps the same symbols a cycle and cycles of latency")
    elif a["above_fmax"]:
        slowest = min(a["parts"], key=lambda part: part["fmax_mhz"]) if a["parts"] else None
        where = (f" ({slowest['block']}: `{slowest['commands']['fmax_mhz']}`)"
                 if slowest else "")
        lines.append(f"note: {a['clock_mhz']:g} MHz is above the Fmax the ECP5 flow reached "
                     f"for this stream, {a['stream_fmax_mhz']:g} MHz{where}; the figures "
                     "assume a faster process keeps the same symbols a cycle and cycles of "
                     "latency")
    return "\n".join(lines)


# -- the command ------------------------------------------------------------------------------

def add_arguments(parser):
    parser.add_argument("files", nargs="*", metavar="FILE",
                        help="tensors to carry (.npy or .safetensors; default: the bundled "
                             "sample of the codec's format, tables from steps 0-2, step 3 "
                             "coded)")
    parser.add_argument("--gbps", type=float, required=True, metavar="G",
                        help="the wire's rate of flit bits, in Gb/s")
    parser.add_argument("--clock-mhz", type=float, required=True, metavar="F",
                        help="the codecs' clock, in MHz")
    parser.add_argument("--codec", choices=list(CODECS), default="qlc",
                        help="the link's codec (default qlc)")
    parser.add_argument("--streams", type=int, default=1, metavar="K",
                        help=f"streams side by side, 1..{MAX_STREAMS} (default 1)")
    parser.add_argument("--lanes", type=int, default=None, metavar="N",
                        help="lanes a stream (default 1; exponent: 4)")
    parser.add_argument("--flit-bytes", type=int, choices=list(FLIT_BYTES),
                        default=DEFAULT_FLIT_BYTES, help="bytes a flit (default 256)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args):
    # Check the cheap inputs before coding any files.
    _positive(args.gbps, "--gbps")
    _positive(args.clock_mhz, "--clock-mhz")
    if not 1 <= args.streams <= MAX_STREAMS:
        raise ValueError(f"--streams must be 1..{MAX_STREAMS} (the flit header's stream "
                         f"field), not {args.streams}")
    figures_for(args.codec, args.lanes)
    sample = measure_link(args.codec, args.files, streams=args.streams,
                          flit_bytes=args.flit_bytes)
    answer = link_model(gbps=args.gbps, clock_mhz=args.clock_mhz, codec=args.codec,
                        streams=args.streams, lanes=args.lanes, flit_bytes=args.flit_bytes,
                        link_bytes_per_symbol=sample.link_bytes_per_symbol,
                        raw_bytes_per_symbol=sample.raw_bytes_per_symbol)
    if args.json:
        print(json.dumps(dict(answer, source=sample.source, stats=sample.stats._asdict()),
                         indent=2))
    else:
        print(format_answer(answer, sample))
    return 0


# -- the flit overhead on the bundled sample (``linkcodec bench --link``) ------------------

def link_overhead_rows(flit_bytes=DEFAULT_FLIT_BYTES):
    """Per codec and tensor class of the bundled sample, single-stage (tables fitted to
    steps 0-2, step 3 coded, one frame a tensor): ``symbols``, ``raw_bytes``,
    ``coded_bytes`` (the codec's own frames, each rounded up to a byte), ``link_bytes``
    (every flit, table flits included), ``link_per_coded``, ``link_per_raw``, ``flits``,
    ``raw_flits`` (data flits that went raw) and ``table_flits``, and after each codec's
    classes a row of kind ``"all"``, their sums. Streams do not change the figures: each
    frame is cut into flits on its own."""
    def row(codec, kind, stats):
        return {"codec": codec, "kind": kind, **stats._asdict(),
                "link_per_coded": stats.link_bytes / stats.coded_bytes,
                "link_per_raw": stats.link_bytes / stats.raw_bytes}

    rows = []
    for codec in CODECS:
        fmt = LinkFormat(codec, flit_bytes=flit_bytes, sequence=LINK_SEQUENCE)
        block = _block(codec)
        per_class = []
        for kind in KINDS:
            earlier, later = bundled_class(codec, kind)
            per_class.append(_flit_stats(fmt, block.fitted_tables(earlier), later))
            rows.append(row(codec, kind, per_class[-1]))
        rows.append(row(codec, "all", _sum_stats(per_class)))
    return rows


def render_link_overhead(rows):
    """:func:`link_overhead_rows` as a Markdown table."""
    from .tables import markdown_table

    return markdown_table(
        ["codec", "tensor class", "symbols", "raw bytes", "codec's frame bytes",
         "link bytes", "link / codec", "link / raw", "flits", "raw flits", "table flits"],
        [[row["codec"], row["kind"], f"{row['symbols']:,}", f"{row['raw_bytes']:,}",
          f"{row['coded_bytes']:,}", f"{row['link_bytes']:,}",
          f"{row['link_per_coded']:.4f}", f"{row['link_per_raw']:.4f}", f"{row['flits']:,}",
          f"{row['raw_flits']:,}", str(row["table_flits"])] for row in rows],
        align="llrrrrrrrrr")
