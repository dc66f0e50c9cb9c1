"""``linkcodec bench``: the figures quoted in README and docs, from one command.

Sections: ``--compression`` (golden QLC, base vs optimal layout, per tensor class) and
``--hardware`` (both QLC blocks under Verilator at lanes 1, 2, 4 and 8 with no stalls,
as ``linkcodec sim`` measures them). With no section flag, all run.
"""

import json

import numpy as np

from .cli import bundled_files

__all__ = ["add_arguments", "run"]


def add_arguments(parser):
    parser.add_argument("--compression", action="store_true",
                        help="QLC base vs optimal layout per tensor class (golden model)")
    parser.add_argument("--hardware", action="store_true",
                        help="cycles per symbol of both QLC blocks at lanes 1, 2, 4, 8")
    parser.add_argument("--lanes", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--json", action="store_true", help="print JSON")


def hardware_rows(lanes_list, *, kind="ffn2_act", layer=3):
    from .golden.qlc import QlcCode
    from .sim.harness import run_qlc

    path = bundled_files(kind, layers=[layer])[0]
    symbols = np.load(path).reshape(-1)
    code = QlcCode.from_pmf(np.bincount(symbols, minlength=256))
    rows = []
    for block in ("qlc-encoder", "qlc-decoder"):
        for lanes in lanes_list:
            result = run_qlc(block, [symbols], lanes=lanes, code=code, seed=1)
            rows.append({
                "block": block, "lanes": lanes, "file": path.name,
                "word_width": result["word_width"], "symbols": result["symbols"],
                "cycles": result["cycles"],
                "symbols_per_cycle": round(result["symbols_per_cycle"], 4),
                "bit_exact": result["bit_exact"],
            })
    return rows


def run(args):
    from .report import class_table, format_table

    everything = not (args.compression or args.hardware)
    report = {}
    if args.compression or everything:
        rows = class_table()
        report["compression"] = [
            {key: (list(value.sizes) if key == "optimal_layout" else value)
             for key, value in row.items()} for row in rows]
        if not args.json:
            print("## QLC compression on the bundled tensors (`linkcodec bench --compression`)\n")
            print(format_table(rows))
            print()
    if args.hardware or everything:
        rows = hardware_rows(args.lanes)
        report["hardware"] = rows
        if not args.json:
            print("## Cycles per symbol, no stalls (`linkcodec bench --hardware`)\n")
            print("| block | lanes | word bits | symbols | cycles | symbols/cycle | "
                  "of lanes | bit-exact |")
            print("|---|---:|---:|---:|---:|---:|---:|---|")
            for row in rows:
                print(f"| {row['block']} | {row['lanes']} | {row['word_width']} | "
                      f"{row['symbols']} | {row['cycles']} | {row['symbols_per_cycle']:.3f} | "
                      f"{row['symbols_per_cycle'] / row['lanes']:.1%} | "
                      f"{'yes' if row['bit_exact'] else 'NO'} |")
            print(f"\n(file: {rows[0]['file']})")
    if args.json:
        print(json.dumps(report, indent=2))
    ok = all(row["bit_exact"] for row in report.get("hardware", []))
    return 0 if ok else 1
