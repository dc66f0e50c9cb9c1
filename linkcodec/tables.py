"""Markdown tables, and the QLC class table of the bundled tensors that ``linkcodec demo``
and ``linkcodec bench`` both print."""

import numpy as np

from .bundled import KINDS, bundled_files, tensor_kind
from .golden.formats import compressibility
from .inputs import read_e4m3_shards

__all__ = ["markdown_table", "class_table", "format_table"]


def class_table(files=None):
    """One row per tensor class: symbols, entropy, QLC base and optimal, in bits/symbol
    and compressibility (1 - bits/8). Each class's code comes from its own pooled PMF."""
    from .golden.huffman import entropy_bits
    from .golden.qlc import QlcCode, QlcLayout

    files = bundled_files() if files is None else files
    groups = {}
    for path, shard in zip(files, read_e4m3_shards(files)):
        groups.setdefault(tensor_kind(path), []).append(shard.symbols)
    rows = []
    for kind in sorted(groups, key=lambda k: (KINDS.index(k) if k in KINDS else 99, k)):
        symbols = np.concatenate(groups[kind])
        counts = np.bincount(symbols, minlength=256)
        row = {"class": kind, "files": len(groups[kind]), "symbols": int(symbols.size),
               "entropy": entropy_bits(counts)}
        for name, layout in (("qlc_base", QlcLayout.base()), ("qlc_optimal", None)):
            code = QlcCode.from_pmf(counts, layout=layout)
            row[name] = code.expected_bits(counts)    # exactly the frame's bits / symbol
            if layout is None:
                row["optimal_layout"] = list(code.layout.sizes)   # area sizes
        rows.append(row)
    return rows


def markdown_table(head, rows, align=None):
    """A Markdown table: ``head`` the column titles, ``rows`` lists of cell strings,
    ``align`` one letter a column (``l`` or ``r``; default: first ``l``, rest ``r``)."""
    align = align or "l" + "r" * (len(head) - 1)
    rule = "|" + "".join("---|" if a == "l" else "---:|" for a in align)
    lines = ["| " + " | ".join(head) + " |", rule]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def format_table(rows):
    def cell(bits):
        return f"{bits:.3f} b ({compressibility(bits):.1%})"

    return markdown_table(
        ["tensor class", "files", "symbols", "entropy", "QLC base", "QLC optimal",
         "optimal layout (sizes)"],
        [[row["class"], str(row["files"]), str(row["symbols"]), cell(row["entropy"]),
          cell(row["qlc_base"]), cell(row["qlc_optimal"]),
          ",".join(map(str, row["optimal_layout"]))] for row in rows],
        align="lrrrrrl")
