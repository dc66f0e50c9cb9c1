"""What a Huffman code length limit costs: the table docs/huffman.md quotes is what
``linkcodec bench --huffman-limits`` makes, and the command stands beside it."""

from pathlib import Path

import pytest

from linkcodec.bench import HUFFMAN_LIMITS, huffman_limit_rows, render_huffman_limits
from linkcodec.bundled import KINDS

ROOT = Path(__file__).resolve().parents[1]

# One worker for both tests, so the rows (15 s) are computed once (a session fixture:
# xdist may run other modules' tests between these two, which tears a module fixture
# down; make test computed it twice).
pytestmark = pytest.mark.xdist_group("huffman-limits")


@pytest.fixture(scope="session")
def rows():
    return huffman_limit_rows()


def test_rows_cover_every_class_and_limit(rows):
    assert [row["kind"] for row in rows] == [*KINDS, "all"]
    assert rows[-1]["symbols"] == sum(row["symbols"] for row in rows[:-1])
    for row in rows:
        assert list(row["by_limit"]) == list(HUFFMAN_LIMITS)
        # 9 bits is far too tight everywhere: every class loses at least a point
        assert row["by_limit"][15] - row["by_limit"][9] > 0.01, row


def test_huffman_md_quotes_the_table(rows):
    """The table in docs/huffman.md, "What each limit costs, single-stage", is this
    function's output, and the command that makes it is shown beside it."""
    text = (ROOT / "docs" / "huffman.md").read_text()
    start = text.index("**What each limit costs, single-stage.**")
    section = text[start:text.index("**Smoothing.**", start)]
    assert "linkcodec bench --huffman-limits" in section
    assert render_huffman_limits(rows) in section
