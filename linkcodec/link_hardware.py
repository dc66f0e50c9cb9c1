"""The link's hardware as the tools see it: ``LinkTx`` and ``LinkRx`` built, named,
written as Verilog, synthesised and simulated.

- :func:`link_component` builds ``link-tx`` or ``link-rx`` (or ``link-pair``) for a
  codec, a stream count and lanes; :func:`link_module_name` names its Verilog module
  (``linkcodec_link_tx_qlc_s16_l1``, with ``_f<bytes>`` and ``_w<bytes>`` where the flit
  or link word is not the default);
- :func:`link_throughput` is ``linkcodec sim link`` on the bundled sample with no stalls,
  the figure ``linkcodec report link-tx link-rx`` multiplies by Fmax
  (:func:`linkcodec.report.link_report_row`; ``linkcodec.generate.generate_link``
  writes the Verilog).
"""

import numpy as np

__all__ = ["LINK_BLOCKS", "link_component", "link_floorplan", "link_module_name",
           "link_sample", "link_throughput"]

#: The link's blocks, as ``generate`` and ``report`` name them.
LINK_BLOCKS = ("link-tx", "link-rx")


def link_component(kind, *, codec="qlc", streams=1, lanes=1, flit_bytes=256, link_bytes=64,
                   tables=None, tables_in_band=True, retry_depth=0, ack_latency=None,
                   stream_numbers=None, status_cycles=None):
    """``kind`` (``"link-tx"``, ``"link-rx"`` or ``"link-pair"``) built with these
    parameters (``ack_latency`` and ``status_cycles`` None: the default; the latter is
    LinkTx's alone, and ignored for the others)."""
    from .rtl.link import DEFAULT_ACK_LATENCY, LinkPair, LinkRx, LinkTx

    classes = {"link-tx": LinkTx, "link-rx": LinkRx, "link-pair": LinkPair}
    if kind not in classes:
        raise ValueError(f"kind must be one of {', '.join(classes)}, not {kind!r}")
    return classes[kind](codec=codec, streams=streams, lanes=lanes, flit_bytes=flit_bytes,
                         link_bytes=link_bytes, tables=tables, tables_in_band=tables_in_band,
                         retry_depth=retry_depth,
                         ack_latency=ack_latency or DEFAULT_ACK_LATENCY,
                         stream_numbers=stream_numbers,
                         **({} if status_cycles is None or kind != "link-tx"
                            else {"status_cycles": status_cycles}))


#: The block RAM columns (:func:`linkcodec.synth.ebr_site`) of the link's floorplan
#: (``LinkRx``'s and ``LinkTx``'s), left to right, for 8 streams a row.
LINK_FLOORPLAN_COLUMNS = (1, 8, 15, 22, 29, 35, 43, 50)
#: Its block RAM rows (y = 22 and 70 on the 85k).
LINK_FLOORPLAN_ROWS = (0, 2)


def link_floorplan(kind, *, codec="qlc", streams=1):
    """The floorplan ``linkcodec report`` places ``kind`` with (``pins`` for
    :func:`linkcodec.synth.ecp5`), or None for none.

    ``LinkRx`` and ``LinkTx`` of QLC above ``LINK_GROUP`` streams: each stream's block
    RAMs (the receiver's one, its decoder's rank table; the transmitter's two, its chunk
    queue and its encoder's table, side by side) fixed at block RAM sites of their own,
    the streams in two rows across the die (:data:`LINK_FLOORPLAN_ROWS`; at 16 streams 8
    a row, at the sites of :data:`LINK_FLOORPLAN_COLUMNS`, fewer streams spread over
    them). Out of context a design has no fixed cell, and the placer spread each stream
    across the die; this gives each stream a place of its own. The other codecs' blocks
    have no such floorplan (the exponent blocks have no block RAM, the Huffman decoder 17
    a stream); docs/link.md, "The receiver, placed with a floorplan", and "Both ends"."""
    from .rtl.link import LINK_GROUP
    from .synth import EBR_GROUPS_85K, ebr_site

    if kind not in LINK_BLOCKS:
        raise ValueError(f"kind must be one of {', '.join(LINK_BLOCKS)}, not {kind!r}")
    if codec != "qlc" or streams <= LINK_GROUP:
        return None
    per_row = -(-streams // len(LINK_FLOORPLAN_ROWS))
    last = len(LINK_FLOORPLAN_COLUMNS) - 1
    columns = [LINK_FLOORPLAN_COLUMNS[round(index * last / (per_row - 1))]
               for index in range(per_row)]
    pins = []
    for stream in range(streams):
        row, place = divmod(stream, per_row)
        column = columns[place]
        nearest = sorted(range(4 * len(EBR_GROUPS_85K)),
                         key=lambda other: (abs(other - column), other))[:4]
        pins.append((f"stream{stream}.", [ebr_site(other, LINK_FLOORPLAN_ROWS[row])
                                          for other in nearest]))
    return pins


def link_module_name(kind, *, codec="qlc", streams=1, lanes=1, flit_bytes=256,
                     link_bytes=64, tables_in_band=True, retry_depth=0, ack_latency=None,
                     stream_numbers=None, status_cycles=None):
    """``linkcodec_link_tx_qlc_s16_l1``: what the module is, its codec, streams and lanes,
    its flit and link word bytes where not the default (``_f64``, ``_w32``),
    ``_fixed`` for tables fixed at elaboration (no tables in band), ``_r16`` for
    retry with 16 flits kept (``_a64`` an ack latency not the default) and
    ``_unnumbered`` for a link without retry and without stream numbers (``stream_numbers``
    None: the blocks' default, numbered unless with retry); ``_q4096`` for LinkTx's
    status flits after 4,096 idle cycles where that is not the default."""
    name = f"linkcodec_{kind.replace('-', '_')}_{codec}_s{streams}_l{lanes}"
    if flit_bytes != 256:
        name += f"_f{flit_bytes}"
    if link_bytes != 64:
        name += f"_w{link_bytes}"
    if not tables_in_band:
        name += "_fixed"
    if retry_depth:
        name += f"_r{retry_depth}"
        if ack_latency is not None and kind != "link-rx":
            name += f"_a{ack_latency}"
    if stream_numbers is False and not retry_depth:
        name += "_unnumbered"
    if status_cycles is not None and kind == "link-tx":
        name += f"_q{status_cycles}"
    return name


def link_sample(codec):
    """``(tables, frames)``: the bundled sample as the link's figures take it: tables
    fitted on steps 0-2 of every tensor of the codec's format (e4m3; bf16 for the
    exponent codec), the step-3 tensors as frames."""
    from .bundled import bundled_bf16_files, bundled_files
    from .sim.link import fitted_link_tables

    files = bundled_bf16_files() if codec == "exponent" else bundled_files()
    earlier = [np.load(path).reshape(-1) for path in files if not path.stem.endswith("_s3")]
    later = [np.load(path).reshape(-1) for path in files if path.stem.endswith("_s3")]
    return fitted_link_tables(codec, earlier), later


def link_throughput(*, codec="qlc", streams=1, lanes=1, flit_bytes=256, link_bytes=64,
                    tables_in_band=True, retry_depth=0, ack_latency=None, frames=None,
                    build_root=None, stream_numbers=None):
    """``linkcodec sim link``'s figures with no idle cycle and no backpressure, for
    ``frames`` dealt to the streams, or by default the bundled sample's step-3 tensors,
    one after another, cut into ``streams`` frames of equal size: every stream gets the
    same share, so the figure is the link's rate, not how unevenly whole tensors deal."""
    from .sim.link import run_link

    tables, later = link_sample(codec)
    if frames is None:
        frames = np.array_split(np.concatenate(later), streams)
    return run_link(frames, codec=codec, streams=streams,
                    flit_bytes=flit_bytes, link_bytes=link_bytes, tables=tables,
                    tables_in_band=tables_in_band, idle="none", stall="none", seed=1,
                    check_tx=False, build_root=build_root, retry_depth=retry_depth,
                    stream_numbers=stream_numbers,
                    **({} if ack_latency is None else {"ack_latency": ack_latency}))
