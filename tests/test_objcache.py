"""sim/objcache.py: Verilator's runtime compiled once, every other compile run as given
(a stand-in compiler counts its runs), and the runner's builds using it."""

import os
import stat
import sys
from pathlib import Path

import pytest

from linkcodec.sim import objcache, runner

FAKE_CXX = """#!{python}
import sys
from pathlib import Path
from pathlib import Path
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(" ".join(args) + "\\n")
if "fail" in args:
    sys.exit(3)
out = Path(args[args.index("-o") + 1])
source = Path([a for a in args if a.endswith(".cpp")][0])
out.write_bytes(b"object of " + source.read_bytes() + " ".join(args).encode())
out.with_suffix(".d").write_text(f"{{out.name}}: {{source}}\\n")
"""


@pytest.fixture
def tree(tmp_path, monkeypatch):
    root = tmp_path / "verilator"
    (root / "include").mkdir(parents=True)
    (root / "include" / "verilated.cpp").write_text("runtime 1")
    (root / "include" / "verilated_config.h").write_text("version 5")
    (tmp_path / "model.cpp").write_text("model")
    log = tmp_path / "runs.log"
    cxx = tmp_path / "fakecxx"
    cxx.write_text(FAKE_CXX.format(python=sys.executable, log=str(log)))
    cxx.chmod(cxx.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("VERILATOR_ROOT", str(root))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    return tmp_path, root, cxx, log


def _compile(tmp_path, cxx, build, source, *flags):
    out = tmp_path / build / "verilated.o"
    code = objcache.main([str(tmp_path / "cache"), str(cxx), "-O1", *flags, "-c", "-o",
                          str(out), str(source)])
    return code, out


def _runs(log):
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_a_runtime_source_compiles_once_and_is_copied_after(tree):
    tmp_path, root, cxx, log = tree
    source = root / "include" / "verilated.cpp"
    code, first = _compile(tmp_path, cxx, "a", source)
    assert code == 0 and _runs(log) == 1
    code, second = _compile(tmp_path, cxx, "b", source)
    assert code == 0 and _runs(log) == 1, "the second build's object came from the cache"
    assert second.read_bytes() == first.read_bytes()
    assert (tmp_path / "b" / "verilated.d").read_text() == "verilated.o: " + str(source) + "\n"


def test_other_flags_another_source_or_version_compile_again(tree):
    tmp_path, root, cxx, log = tree
    source = root / "include" / "verilated.cpp"
    _compile(tmp_path, cxx, "a", source)
    _compile(tmp_path, cxx, "b", source, "-DVM_TRACE=1")
    assert _runs(log) == 2
    source.write_text("runtime 2")
    _compile(tmp_path, cxx, "b", source)
    assert _runs(log) == 3
    (root / "include" / "verilated_config.h").write_text("version 6")
    _compile(tmp_path, cxx, "b", source)
    assert _runs(log) == 4
    _compile(tmp_path, cxx, "a", source)
    assert _runs(log) == 4


def test_a_model_source_always_compiles(tree):
    tmp_path, root, cxx, log = tree
    for build in ("a", "b", "a"):
        code, _ = _compile(tmp_path, cxx, build, tmp_path / "model.cpp")
        assert code == 0
    assert _runs(log) == 3
    assert not (tmp_path / "cache").exists()


def test_a_failed_compile_stores_nothing_and_returns_its_code(tree):
    tmp_path, root, cxx, log = tree
    source = root / "include" / "verilated.cpp"
    code, _ = _compile(tmp_path, cxx, "a", source, "fail")
    assert code == 3
    code, _ = _compile(tmp_path, cxx, "b", source, "fail")
    assert code == 3 and _runs(log) == 2


def test_cache_key_needs_one_source_a_compile_and_an_output(tree):
    tmp_path, root, cxx, log = tree
    source = str(root / "include" / "verilated.cpp")
    assert objcache.cache_key(["g++", "-c", "-o", "x.o", source], root=root)
    assert objcache.cache_key(["g++", "-o", "x.o", source], root=root) is None
    assert objcache.cache_key(["g++", "-c", source], root=root) is None
    assert objcache.cache_key(["g++", "-c", "-o", "x.o", source, source + ".cpp"],
                              root=root) is None
    assert objcache.cache_key(["g++", "-c", "-o", "x.o", str(tmp_path / "model.cpp")],
                              root=root) is None
    # the output's folder is not in the key, its name is (the .d names it)
    assert (objcache.cache_key(["g++", "-c", "-o", "a/x.o", source], root=root)
            == objcache.cache_key(["g++", "-c", "-o", "b/x.o", source], root=root)
            != objcache.cache_key(["g++", "-c", "-o", "b/y.o", source], root=root))


def test_the_runner_sets_objcache_unless_the_user_has(monkeypatch):
    monkeypatch.delenv("OBJCACHE", raising=False)
    monkeypatch.setenv("MAKEFLAGS", "")
    runner.verilator_environment()
    flags = os.environ["MAKEFLAGS"].split()
    [setting] = [flag for flag in flags if flag.startswith("OBJCACHE=")]
    script = setting.split("=", 1)[1]
    assert os.access(script, os.X_OK)
    assert "linkcodec.sim.objcache" in Path(script).read_text()
    monkeypatch.setenv("MAKEFLAGS", "OBJCACHE=ccache")
    runner.verilator_environment()
    assert os.environ["MAKEFLAGS"].count("OBJCACHE") == 1
