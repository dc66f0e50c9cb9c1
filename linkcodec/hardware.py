"""What a hardware user judges, measured one way for every block: symbols per cycle in
simulation, and area and Fmax from synthesis.

- :func:`throughput` runs a block under Verilator on ``minilm_l3_ffn2_act_s0.npy`` of the
  bundled sample (a block of bf16 values on ``minilm_bf16_l4_ffn2_act_s0.npy``) with tables fitted to that file (the block description's
  ``fitted_tables``: for QLC the optimal layout from its PMF), loaded at run time,
  no idle cycles and no backpressure: the run ``linkcodec bench --hardware`` shows.
- :func:`synthesis` takes the block's generated Verilog (``linkcodec generate``, default
  reset-time tables) through :func:`linkcodec.synth.ecp5` (ECP5-85k, speed grade 6,
  100 MHz target, nextpnr seed 1, out of context) and :func:`linkcodec.synth.gates_nand2`.
- :func:`report_row` puts both together: the entry ``linkcodec report --json`` prints, with
  ``msymbols_per_s = symbols_per_cycle x fmax_mhz``.
"""

import os
from pathlib import Path

import numpy as np

from .bundled import bundled_bf16_files, bundled_files

__all__ = ["HARDWARE_KIND", "HARDWARE_LAYER", "HARDWARE_BF16_LAYER", "SYNTH_ROOT",
           "hardware_file", "hardware_bf16_file", "sample_frames", "throughput", "synthesis",
           "block_latency", "report_row"]

#: The tensor every block's symbols per cycle are measured on.
HARDWARE_KIND, HARDWARE_LAYER = "ffn2_act", 3

#: Where synthesis runs are kept (``LINKCODEC_SYNTH`` overrides); they are cached by the
#: hash of the Verilog and the options, so a re-run is instant.
SYNTH_ROOT = Path(os.environ.get("LINKCODEC_SYNTH", Path.cwd() / "build" / "synth"))


#: The layer of the bf16 tensor that blocks of bf16 values are measured on (the sample's
#: bf16 tensors are of layers 1 and 4).
HARDWARE_BF16_LAYER = 4


def hardware_file(block=None):
    """The tensor ``block`` (a name or a description; any e4m3 block if None) is measured
    on: ``minilm_l3_ffn2_act_s0.npy``, step 0 of layer 3's FFN2 activations, for a block
    of e4m3 symbols; ``minilm_bf16_l4_ffn2_act_s0.npy`` for a block of bf16 values."""
    if block is not None:
        if isinstance(block, str):
            from .rtl.blocks import get_block

            block = get_block(block)
        if block.value_bits == 16:
            return hardware_bf16_file()
    return bundled_files(HARDWARE_KIND, layers=[HARDWARE_LAYER], steps=[0])[0]


def hardware_bf16_file():
    """``minilm_bf16_l4_ffn2_act_s0.npy``, what blocks of bf16 values are measured on."""
    return bundled_bf16_files(HARDWARE_KIND, layers=[HARDWARE_BF16_LAYER], steps=[0])[0]


def sample_frames(block, count=1500):
    """``[frame]``: the first ``count`` symbols of :func:`hardware_file` for ``block`` (a
    description, a pair's included), as the contract suite's round trips take them."""
    return [np.load(hardware_file(block)).reshape(-1)[:count]]


def throughput(block, lanes, *, word_width=None):
    """Simulate ``block`` at ``lanes`` on :func:`hardware_file`, no stalls; returns the
    row ``bench --hardware`` prints (``symbols_per_cycle``, ``bit_exact`` ...)."""
    from .rtl.blocks import get_block
    from .sim.harness import run_frames

    path = hardware_file(block)
    symbols = np.load(path).reshape(-1)
    tables = get_block(block).fitted_tables([symbols])
    result = run_frames(block, [symbols], lanes=lanes, word_width=word_width, tables=tables,
                        seed=1)
    return {
        "block": result["block"], "lanes": lanes, "file": path.name,
        "word_width": result["word_width"], "symbols": result["symbols"],
        "cycles": result["cycles"],
        "symbols_per_cycle": round(result["symbols_per_cycle"], 4),
        "bit_exact": result["bit_exact"],
    }


def synthesis(block, lanes, *, word_width=None, seeds=1, build_root=None, progress=False):
    """ECP5 and NAND2-equivalent figures of ``block``'s generated Verilog."""
    import tempfile

    from .generate import generate
    from .results import verilog_sha256
    from .synth import ecp5, gates_nand2

    build_root = Path(build_root or SYNTH_ROOT)
    with tempfile.TemporaryDirectory(prefix="linkcodec-verilog-") as scratch:
        verilog = generate(block, lanes=lanes, word_width=word_width, output=scratch)[0]
        top = verilog.stem
        fpga = ecp5([verilog], top, build_dir=build_root, seeds=seeds, progress=progress)
        asic = gates_nand2([verilog], top, build_dir=build_root)
        sha256 = verilog_sha256(verilog)
    return {"module": top, "verilog_sha256": sha256, "fpga": fpga, "asic": asic}


def block_latency(block, lanes, *, word_width=None):
    """``block``'s ``latency`` property at ``lanes`` (cycles from an input transfer to the
    first output transfer that carries something of it, no stalls)."""
    from amaranth.hdl import Fragment

    from .rtl.blocks import get_block

    component = get_block(block).build(lanes=lanes, word_width=word_width)
    Fragment.get(component, None)
    return component.latency


def report_row(block, lanes, *, word_width=None, seeds=1, build_root=None, progress=False):
    """One entry of ``linkcodec report --json`` for ``block`` at ``lanes``."""
    sim = throughput(block, lanes, word_width=word_width)
    synth = synthesis(block, lanes, word_width=sim["word_width"], seeds=seeds,
                      build_root=build_root, progress=progress)
    fpga = synth["fpga"]
    fmax = fpga["fmax_mhz"]
    return {
        "block": block,
        "lanes": lanes,
        "word_width": sim["word_width"],
        "device": f"LFE5U-{fpga['device'].upper().removesuffix('K')}F speed {fpga['speed']}",
        "luts": fpga["luts"],
        "ffs": fpga["ffs"],
        "ram_cells": fpga["ram_cells"],
        "fmax_mhz": None if fmax is None else round(fmax, 2),
        "gates_nand2": synth["asic"]["gates_nand2"],
        "symbols_per_cycle": sim["symbols_per_cycle"],
        "msymbols_per_s": None if fmax is None else round(sim["symbols_per_cycle"] * fmax, 1),
        "latency_cycles": block_latency(block, lanes, word_width=sim["word_width"]),
        "module": synth["module"],
        "verilog_sha256": synth["verilog_sha256"],
        "seeds": seeds,
        "fmax_by_seed": fpga["fmax_by_seed"],
        "hierarchical": fpga["hierarchical"],
        "bit_exact": sim["bit_exact"],
        "tools": fpga["tools"],
    }
