"""The hardware results table and the Verilog each row measured.

``linkcodec bench --synthesis`` measures every block of the registry at each lane count
and the link shapes of :data:`LINK_SHAPES` (:mod:`linkcodec.report`, median of
:data:`SEEDS` nextpnr seeds) and writes them twice: as the hardware part of
``docs/results.md`` and, machine-readable, as ``linkcodec/data/results.json``. Each row carries
``verilog_sha256``, the SHA-256 of the Verilog that ``linkcodec generate`` writes for it
and that synthesis read. :func:`stale_rows` regenerates each row's Verilog (no synthesis)
and names every row whose hash differs: a change to a block's RTL lands with its figures
measured again (``tests/test_results.py`` runs it in ``make test``).
"""

import hashlib
import json
import tempfile
from pathlib import Path

from .rtl.link_codec import link_hardware_codecs

__all__ = ["SEEDS", "LINK_SHAPES", "RESULTS_JSON", "verilog_sha256", "row_verilog",
           "row_name", "row_key", "read_rows", "table_row", "write_rows", "stale_rows",
           "current_rows"]

#: nextpnr seeds of every row: Fmax is their median, with the lowest and highest beside it.
SEEDS = 3

#: The link shapes the table holds, ``(block, codec, streams)``, each at 1 lane, 256-byte
#: flits, 64 link bytes a cycle, tables in band, stream numbers on and no retry (the
#: defaults of ``linkcodec generate link-tx|link-rx``).
LINK_SHAPES = [(kind, codec, 4) for codec in link_hardware_codecs()
               for kind in ("link-tx", "link-rx")]

#: The table, machine-readable: package data, so that ``linkcodec link`` reads its figures
#: from an installed wheel too.
RESULTS_JSON = Path(__file__).resolve().parent / "data" / "results.json"

#: The keys of a row that say which Verilog it is (the rest are figures).
_LINK_KEYS = ("codec", "streams", "tables_in_band", "retry_depth", "stream_numbers")


def verilog_sha256(path):
    """The SHA-256 (hex) of the Verilog file at ``path``."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def row_name(row):
    """A row in words: ``qlc-decoder at 1 lane``, ``link-rx (qlc, 4 streams) at 1 lane``."""
    lanes = f"{row['lanes']} lane" + ("" if row["lanes"] == 1 else "s")
    if "codec" in row:
        return f"{row['block']} ({row['codec']}, {row['streams']} streams) at {lanes}"
    return f"{row['block']} at {lanes}"


def row_key(row):
    """What a row measured, as ``(block, lanes, codec, streams)`` (``None`` for a block's
    codec and streams): two rows of one key are of the same shape."""
    return row["block"], row["lanes"], row.get("codec"), row.get("streams")


def row_verilog(row, output):
    """Write the Verilog that ``row`` (an entry of ``linkcodec report --json``) measured
    into ``output``, as ``linkcodec generate`` does; its path."""
    from .generate import generate, generate_link

    if "codec" in row:
        options = {key: row[key] for key in _LINK_KEYS}
        return generate_link(row["block"], lanes=row["lanes"],
                             link_bytes=row["word_width"] // 8, output=output, **options)[0]
    return generate(row["block"], lanes=row["lanes"], word_width=row["word_width"],
                    output=output)[0]


def read_rows(path=RESULTS_JSON):
    """The rows of the table at ``path``; a ``LookupError`` if there is none."""
    path = Path(path)
    if not path.exists():
        raise LookupError(f"{path} does not exist: run `linkcodec bench --synthesis`")
    return json.loads(path.read_text())["rows"]


def table_row(block, lanes=1, *, codec=None, streams=None, path=RESULTS_JSON):
    """The row of the table at ``path`` for ``block`` at ``lanes`` (a link block's:
    ``codec`` and ``streams`` too); a ``LookupError`` naming it if the table has none."""
    for row in read_rows(path):
        if (row["block"], row["lanes"], row.get("codec"), row.get("streams")) \
                == (block, lanes, codec, streams):
            return row
    wanted = {"block": block, "lanes": lanes, "codec": codec, "streams": streams}
    raise LookupError(f"the results table ({path}) has no row for "
                      f"{row_name({key: value for key, value in wanted.items() if value is not None})}: "
                      f"add the shape to `linkcodec bench --synthesis` and run it")


def write_rows(rows, path=RESULTS_JSON):
    """Write ``rows`` as the table at ``path``, each with the keys that say what it
    measured and its figures."""
    keep = ("block", "lanes", "word_width", *_LINK_KEYS, "module", "verilog_sha256",
            "device", "luts", "ffs", "ram_cells", "gates_nand2", "seeds", "fmax_mhz",
            "fmax_by_seed", "symbols_per_cycle", "msymbols_per_s", "link_bytes_per_symbol",
            "latency_cycles",
            "hierarchical", "pinned", "bit_exact", "tools", "unmeasured")
    table = [{key: row[key] for key in keep if key in row} for row in rows]
    Path(path).write_text(json.dumps({"made_by": "linkcodec bench --synthesis",
                                      "rows": table}, indent=1) + "\n")


def _sha256_now(row, verilog):
    """The SHA-256 of the Verilog the code makes now for ``row``."""
    with tempfile.TemporaryDirectory(prefix="linkcodec-results-") as scratch:
        return verilog_sha256(verilog(row, scratch))


def stale_rows(rows, *, verilog=row_verilog):
    """A line for every row of ``rows`` whose Verilog, generated again now
    (``verilog(row, output)`` gives its path), is not the Verilog it measured; empty when
    every row is of this code."""
    stale = []
    for row in rows:
        now = _sha256_now(row, verilog)
        if now != row["verilog_sha256"]:
            stale.append(f"{row_name(row)} (module {row['module']}): the table's row measured "
                         f"Verilog {row['verilog_sha256'][:12]}, the code now makes "
                         f"{now[:12]}; measure it again with `linkcodec bench --synthesis "
                         f"--stale`")
    return stale


def current_rows(rows, *, verilog=row_verilog):
    """The rows of ``rows`` whose Verilog the code still makes (what ``linkcodec bench
    --synthesis --stale`` keeps without measuring it again)."""
    return [row for row in rows if _sha256_now(row, verilog) == row["verilog_sha256"]]
