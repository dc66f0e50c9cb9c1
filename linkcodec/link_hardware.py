"""The link's hardware as the tools see it: ``LinkTx`` and ``LinkRx`` built, named,
written as Verilog, synthesised and simulated.

- :func:`link_component` builds ``link-tx`` or ``link-rx`` (or ``link-pair``) for a
  codec, a stream count and lanes; :func:`link_module_name` names its Verilog module
  (``linkcodec_link_tx_qlc_s16_l1``, with ``_f<bytes>`` and ``_w<bytes>`` where the flit
  or link word is not the default);
- :func:`generate_link` writes the Verilog (``linkcodec generate link-tx ...``);
- :func:`link_report_row` is one entry of ``linkcodec report link-tx link-rx ...``:
  ECP5 area and Fmax, and symbols per cycle from ``linkcodec sim link`` on the bundled
  sample (no stalls), so ``msymbols_per_s`` is what the whole link moves.
"""

from pathlib import Path

import numpy as np

__all__ = ["LINK_BLOCKS", "link_component", "link_module_name", "generate_link",
           "link_sample", "link_throughput", "link_report_row"]

#: The link's blocks, as ``generate`` and ``report`` name them.
LINK_BLOCKS = ("link-tx", "link-rx")


def link_component(kind, *, codec="qlc", streams=1, lanes=1, flit_bytes=256, link_bytes=64,
                   tables=None):
    """``kind`` (``"link-tx"``, ``"link-rx"`` or ``"link-pair"``) built with these
    parameters."""
    from .rtl.link import LinkPair, LinkRx, LinkTx

    classes = {"link-tx": LinkTx, "link-rx": LinkRx, "link-pair": LinkPair}
    if kind not in classes:
        raise ValueError(f"kind must be one of {', '.join(classes)}, not {kind!r}")
    return classes[kind](codec=codec, streams=streams, lanes=lanes, flit_bytes=flit_bytes,
                         link_bytes=link_bytes, tables=tables)


def link_module_name(kind, *, codec="qlc", streams=1, lanes=1, flit_bytes=256,
                     link_bytes=64):
    """``linkcodec_link_tx_qlc_s16_l1``: what the module is, its codec, streams and lanes,
    and its flit and link word bytes where not the default (``_f64``, ``_w32``)."""
    name = f"linkcodec_{kind.replace('-', '_')}_{codec}_s{streams}_l{lanes}"
    if flit_bytes != 256:
        name += f"_f{flit_bytes}"
    if link_bytes != 64:
        name += f"_w{link_bytes}"
    return name


def generate_link(kind, *, codec="qlc", streams=1, lanes=1, flit_bytes=256, link_bytes=64,
                  axi_stream=False, output):
    """Write ``kind``'s Verilog and lint waivers into ``output``; return both paths."""
    from .generate import write_verilog

    if axi_stream:
        raise ValueError("--axi-stream does not take the link's blocks yet: their streams "
                         "are i_s<k>/o_s<k> and o/i, see docs/link.md")
    component = link_component(kind, codec=codec, streams=streams, lanes=lanes,
                               flit_bytes=flit_bytes, link_bytes=link_bytes)
    module = link_module_name(kind, codec=codec, streams=streams, lanes=lanes,
                              flit_bytes=flit_bytes, link_bytes=link_bytes)
    return write_verilog(component, module, output)


def link_sample(codec):
    """``(tables, frames)``: the bundled sample as the link's figures take it: tables
    fitted on steps 0-2 of every e4m3 tensor, the step-3 tensors as frames."""
    from .bundled import bundled_files
    from .sim.link import fitted_link_tables

    files = bundled_files()
    earlier = [np.load(path).reshape(-1) for path in files if not path.stem.endswith("_s3")]
    later = [np.load(path).reshape(-1) for path in files if path.stem.endswith("_s3")]
    return fitted_link_tables(codec, earlier), later


def link_throughput(*, codec="qlc", streams=1, lanes=1, flit_bytes=256, link_bytes=64,
                    frames=None, build_root=None):
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
                    idle="none", stall="none", seed=1, check_tx=False,
                    build_root=build_root)


def link_report_row(kind, *, codec="qlc", streams=1, lanes=1, flit_bytes=256,
                    link_bytes=64, seeds=1, build_root=None, progress=False):
    """One entry of ``linkcodec report --json`` for the link block ``kind``."""
    import tempfile

    from .hardware import SYNTH_ROOT
    from .synth import ecp5, gates_nand2

    build_root = Path(build_root or SYNTH_ROOT)
    with tempfile.TemporaryDirectory(prefix="linkcodec-verilog-") as scratch:
        verilog = generate_link(kind, codec=codec, streams=streams, lanes=lanes,
                                flit_bytes=flit_bytes, link_bytes=link_bytes,
                                output=scratch)[0]
        top = verilog.stem
        fpga = ecp5([verilog], top, build_dir=build_root, seeds=seeds, progress=progress)
        asic = gates_nand2([verilog], top, build_dir=build_root)
    sim = link_throughput(codec=codec, streams=streams, lanes=lanes, flit_bytes=flit_bytes,
                          link_bytes=link_bytes)
    fmax = fpga["fmax_mhz"]
    return {
        "block": kind,
        "codec": codec,
        "streams": streams,
        "lanes": lanes,
        "word_width": 8 * link_bytes,
        "device": f"LFE5U-{fpga['device'].upper().removesuffix('K')}F speed {fpga['speed']}",
        "luts": fpga["luts"],
        "ffs": fpga["ffs"],
        "ram_cells": fpga["ram_cells"],
        "fmax_mhz": fmax,
        "gates_nand2": asic["gates_nand2"],
        "symbols_per_cycle": sim["symbols_per_cycle"],
        "msymbols_per_s": None if fmax is None else round(sim["symbols_per_cycle"] * fmax, 1),
        "link_bytes_per_symbol": sim["link_bytes_per_symbol"],
        "latency_cycles": sim.get("latency_cycles"),
        "module": top,
        "seeds": seeds,
        "fmax_by_seed": fpga["fmax_by_seed"],
        "bit_exact": sim["bit_exact"],
        "tools": fpga["tools"],
    }
