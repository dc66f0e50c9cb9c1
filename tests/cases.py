"""Helpers the test files share (not a test module): how a case that needs a block's
Verilator build is marked, and how a fuzz report is shown when it fails."""

import json

import pytest

from linkcodec.sim.contract import LARGE_LANES


def block_case(block, lanes, *values, id=None, group=None, slow=False):
    """A ``(block, lanes, *values)`` case on the xdist worker that holds the build
    (``group``, default ``<block>-<lanes>``), so that every case of one build runs there,
    one after another; lane counts of :data:`LARGE_LANES` and up, and cases marked
    ``slow``, are ``slow`` (``linkcodec bench --contract`` and ``pytest -m slow`` run
    them, ``make test`` does not)."""
    marks = [pytest.mark.xdist_group(group or f"{block}-{lanes}")]
    if lanes >= LARGE_LANES or slow:
        marks.append(pytest.mark.slow)
    return pytest.param(block, lanes, *values, marks=marks,
                        id=id or "-".join(map(str, (block, lanes, *values))))


def fuzz_summary(report):
    """An assertion message for a fuzz report: its counts, seeds and first mismatches."""
    shown = {key: report[key] for key in ("frames", "mismatches", "hangs", "hung_frames",
                                          "mismatches_by_kind", "runs", "examples")}
    return json.dumps(shown, default=str)[:3000]
