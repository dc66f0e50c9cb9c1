"""What a Huffman code length limit costs: the table docs/huffman.md quotes is what
``linkcodec bench --huffman-limits`` makes, and the command stands beside it."""

from pathlib import Path


from linkcodec.bench import HUFFMAN_LIMITS, huffman_limit_rows, render_huffman_limits
from linkcodec.bundled import KINDS

ROOT = Path(__file__).resolve().parents[1]


def test_rows_cover_every_class_and_limit_and_huffman_md_quotes_them():
    """The rows (a sweep of every tensor class and limit: 11-15 s; one test, as two put
    them on both workers and computed them twice), and the table in docs/huffman.md, "What each
    limit costs, single-stage", is their rendering, with the command that makes it shown
    beside it."""
    rows = huffman_limit_rows()
    assert [row["kind"] for row in rows] == [*KINDS, "all"]
    assert rows[-1]["symbols"] == sum(row["symbols"] for row in rows[:-1])
    for row in rows:
        assert list(row["by_limit"]) == list(HUFFMAN_LIMITS)
        # 9 bits is far too tight everywhere: every class loses at least a point
        assert row["by_limit"][15] - row["by_limit"][9] > 0.01, row
    text = (ROOT / "docs" / "huffman.md").read_text()
    start = text.index("**What each limit costs, single-stage.**")
    section = text[start:text.index("**Smoothing.**", start)]
    assert "linkcodec bench --huffman-limits" in section
    assert render_huffman_limits(rows) in section
