"""Imports run one way: golden <- rtl <- sim <- tooling <- cli (STYLE.md, rule 13).

Every module of the package is read with ``ast`` (nothing is imported, so a module that
does not load yet is still checked), and every import is collected, including those
inside functions, which is where a command line hides a cycle.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Each package of the distribution, its folder (pyproject.toml's package-dir), and its
#: layer: a module may import from its own layer and the ones below, never above.
PACKAGES = {
    "linkcodec.golden": (ROOT / "golden", 0),
    "linkcodec.rtl": (ROOT / "rtl", 1),
    "linkcodec.sim": (ROOT / "sim", 2),
    "linkcodec": (ROOT / "linkcodec", 3),      # the tooling: analyze, bench, inputs ...
}
CLI, MAIN = "linkcodec.cli", "linkcodec.__main__"
LAYER_NAMES = ["golden", "rtl", "sim", "tooling", "cli", "__main__"]


def _modules():
    """``{module name: (path, package name)}`` for every ``.py`` file of every package
    and of the packages inside it (``linkcodec.rtl.link``)."""
    modules = {}
    for package, (folder, _) in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            inner = ".".join((package, *path.relative_to(folder).parent.parts))
            name = inner if path.stem == "__init__" else f"{inner}.{path.stem}"
            modules[name] = (path, inner)
    return modules


MODULES = _modules()


def layer(module):
    if module == MAIN:
        return 5
    if module == CLI:
        return 4
    package = MODULES[module][1]
    while package not in PACKAGES:                # a package inside one: its layer
        package = package.rpartition(".")[0]
    return PACKAGES[package][1]


def _resolve(package, node):
    """The absolute module an ``ImportFrom`` names (``from ..golden import x`` in
    ``linkcodec.rtl`` is ``linkcodec.golden``)."""
    if node.level == 0:
        return node.module
    parts = package.split(".")
    base = parts[:len(parts) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module):
    """``(imported module, name or None, line)`` for every import of ``module`` of the
    package, at any depth. ``from x import y`` counts as importing ``x.y`` when that is
    a module, else as importing the name ``y`` from ``x``."""
    path, package = MODULES[module]
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "linkcodec":
                    found.append((alias.name, None, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(package, node)
            if source is None or source.split(".")[0] != "linkcodec":
                continue
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in MODULES:
                    found.append((submodule, None, node.lineno))
                else:
                    found.append((source, alias.name, node.lineno))
    return found


def _private_uses(module):
    """``(other module, private name, line)``: a ``_name`` taken from another module of
    the package, by ``from x import _name`` or as an attribute ``x._name`` of a module
    bound by an import."""
    path, _ = MODULES[module]
    tree = ast.parse(path.read_text(), filename=str(path))
    uses = [(source, name, line) for source, name, line in _imports(module)
            if name is not None and _is_private(name) and source != module]
    bound = {}      # local name -> module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    bound[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(MODULES[module][1], node)
            for alias in node.names:
                if source and f"{source}.{alias.name}" in MODULES:
                    bound[alias.asname or alias.name] = f"{source}.{alias.name}"
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in bound and _is_private(node.attr)
                and bound[node.value.id] != module):
            uses.append((bound[node.value.id], node.attr, node.lineno))
    return sorted(set(uses), key=lambda use: use[2])


def _is_private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _known(target):
    """The module of the package an import lands in (a package import lands in its
    ``__init__``); ``None`` for a name the package does not have."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def test_every_package_is_found():
    assert {CLI, MAIN, "linkcodec.bundled", "linkcodec.golden.qlc", "linkcodec.rtl.qlc",
            "linkcodec.sim.harness"} <= set(MODULES)


def test_the_tooling_folder_has_no_import_cycle():
    tooling = {name for name, (_, package) in MODULES.items() if package == "linkcodec"}
    graph = {name: sorted({_known(target) for target, _, _ in _imports(name)} & tooling
                          - {name})
             for name in tooling}
    state, stack = {}, []

    def visit(name):      # depth first; a grey node met again closes a cycle
        state[name] = "grey"
        stack.append(name)
        for other in graph[name]:
            if state.get(other) == "grey":
                cycle = stack[stack.index(other):] + [other]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if other not in state:
                visit(other)
        stack.pop()
        state[name] = "black"

    for name in sorted(tooling):
        if name not in state:
            visit(name)


def test_nothing_but_main_imports_the_command_line():
    offenders = sorted({f"{MODULES[name][0].relative_to(ROOT)}:{line}"
                        for name in MODULES if name != MAIN
                        for target, _, line in _imports(name) if _known(target) == CLI})
    assert not offenders, f"{', '.join(offenders)} import linkcodec.cli"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_run_one_way(module):
    """golden <- rtl <- sim <- tooling <- cli <- __main__: nothing imports upwards."""
    upward = set()
    for target, _, line in _imports(module):
        known = _known(target)
        if known is not None and known != "linkcodec" and layer(known) > layer(module):
            upward.add(f"line {line}: {known} ({LAYER_NAMES[layer(known)]})")
    assert not upward, (f"{module} ({LAYER_NAMES[layer(module)]}) imports upwards: "
                        + "; ".join(sorted(upward)))


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_crosses_a_module(module):
    uses = [f"line {line}: {source}.{name}" for source, name, line in _private_uses(module)]
    assert not uses, f"{module} uses private names of other modules: " + "; ".join(uses)


def test_the_checks_see_imports_inside_functions(tmp_path, monkeypatch):
    """The collector itself: a relative import inside a function, a submodule imported
    by ``from . import``, and a private attribute of a bound module are all found."""
    folder = tmp_path / "tooling"
    folder.mkdir()
    (folder / "a.py").write_text("def f():\n    from .b import g, _h\n    return g\n")
    (folder / "b.py").write_text("from . import a\n\ndef g():\n    return a._secret\n")
    monkeypatch.setitem(MODULES, "linkcodec.a", (folder / "a.py", "linkcodec"))
    monkeypatch.setitem(MODULES, "linkcodec.b", (folder / "b.py", "linkcodec"))
    assert _imports("linkcodec.a") == [("linkcodec.b", "g", 2), ("linkcodec.b", "_h", 2)]
    assert _imports("linkcodec.b") == [("linkcodec.a", None, 1)]
    assert _private_uses("linkcodec.a") == [("linkcodec.b", "_h", 2)]
    assert _private_uses("linkcodec.b") == [("linkcodec.a", "_secret", 4)]
    with pytest.raises(pytest.fail.Exception, match="linkcodec.a -> linkcodec.b -> "
                                                    "linkcodec.a|linkcodec.b -> linkcodec.a"):
        test_the_tooling_folder_has_no_import_cycle()


def test_generate_and_report_find_a_block_without_the_simulation_package(tmp_path):
    """The registry (linkcodec.rtl.blocks) and the Verilog writer (linkcodec.rtl.verilog)
    are outside linkcodec.sim: generating a block's and a link's Verilog, and building
    the report's parser, load nothing of it (nor cocotb)."""
    script = f"""
import sys
from linkcodec.generate import generate, generate_link
from linkcodec.report import add_arguments
import argparse
generate("qlc-decoder", lanes=1, output={str(tmp_path)!r})
generate_link("link-rx", codec="huffman", streams=1, output={str(tmp_path)!r})
add_arguments(argparse.ArgumentParser())
print(sorted(m for m in sys.modules if m.startswith(("linkcodec.sim", "cocotb"))))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]", done.stdout
    assert {path.suffix for path in tmp_path.iterdir()} >= {".v"}
