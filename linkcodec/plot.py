"""The pictures of the docs: ``linkcodec analyze --plot`` (PMF and code lengths by rank)
and the plots of ``docs/results.md`` that ``linkcodec bench`` draws (throughput and LUTs
against lanes per block, compressibility per codec and tensor class)."""

import numpy as np

__all__ = ["plot_analysis", "plot_by_lanes", "plot_compressibility"]


def _pyplot():
    """``matplotlib.pyplot`` on the Agg back end: files only, no display needed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_analysis(shards, path, *, codebook=None):
    """Draw the pooled PMF of ``shards`` (by rank, log scale) and, below it, each codec's
    code length for every rank, against the ideal ``-log2 p``."""
    from .golden.huffman import HuffmanCodebook
    from .golden.qlc import QlcCode, QlcLayout

    counts = np.zeros(256)
    for shard in shards:
        counts += np.bincount(shard.byte_plane, minlength=256)
    if not counts.sum():
        raise ValueError("nothing to plot: the tensors are empty")
    pmf = counts / counts.sum()
    order = np.lexsort((np.arange(256), -pmf))
    ranks = np.arange(256)
    book = codebook or HuffmanCodebook.from_pmf(pmf)
    plt = _pyplot()
    lengths = {
        "Huffman (fixed codebook)": book.lengths[order],
        "QLC base layout": QlcCode.from_pmf(pmf, layout=QlcLayout.base()).length_of[order],
        "QLC optimal layout": QlcCode.from_pmf(pmf).length_of[order],
    }
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    what = "e4m3 bytes" if all(s.format == "e4m3" for s in shards) else "byte symbols"
    top.semilogy(ranks, np.where(pmf[order] > 0, pmf[order], np.nan), ".", markersize=3)
    top.set_ylabel("probability")
    top.set_title(f"PMF of {what} by rank, {len(shards)} tensor(s), "
                  f"{int(counts.sum())} symbols")
    with np.errstate(divide="ignore"):
        ideal = -np.log2(pmf[order])
    bottom.plot(ranks, np.where(np.isfinite(ideal), ideal, np.nan), "k:", label="-log2 p")
    for label, values in lengths.items():
        bottom.step(ranks, values, where="mid", label=label)
    bottom.set_xlabel("rank (most probable first)")
    bottom.set_ylabel("code length (bits)")
    bottom.set_ylim(0, 20)
    bottom.legend(loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def plot_by_lanes(rows, key, path, *, ylabel, title):
    """One line per block of ``rows`` (``linkcodec report`` entries): ``row[key]`` against
    lanes, each point labelled with its value. A missing value (``None``) is left out."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(7, 4.5))
    highest = {}        # per lane count, the largest value: its label goes above, others below
    for row in rows:
        if row[key] is not None:
            highest[row["lanes"]] = max(highest.get(row["lanes"], row[key]), row[key])
    for block in dict.fromkeys(row["block"] for row in rows):
        points = sorted((row["lanes"], row[key]) for row in rows
                        if row["block"] == block and row[key] is not None)
        if not points:
            continue
        lanes, values = zip(*points)
        axes.plot(lanes, values, "o-", label=block)
        for x, y in points:
            axes.annotate(f"{y:,.0f}", (x, y), textcoords="offset points",
                          xytext=(0, 6) if y == highest[x] else (0, -13), ha="center",
                          fontsize=8)
    lanes = sorted({row["lanes"] for row in rows})
    axes.set_xscale("log", base=2)
    axes.set_xticks(lanes, [str(n) for n in lanes])
    axes.minorticks_off()
    axes.set_ylim(bottom=0, top=axes.get_ylim()[1] * 1.1)
    axes.set_xlabel("lanes (symbols per cycle at most)")
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def plot_compressibility(classes, codecs, path, *, title):
    """Grouped bars: for each tensor class of ``classes`` (``{"kind": ..., key: fraction
    saved}``), one bar per codec of ``codecs`` (``(key, label)`` pairs), in %."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(10, 4.8))
    width = 0.8 / len(codecs)
    positions = np.arange(len(classes))
    for index, (key, label) in enumerate(codecs):
        axes.bar(positions + (index - (len(codecs) - 1) / 2) * width,
                 [100 * entry[key] for entry in classes], width, label=label)
    axes.set_xticks(positions, [entry["kind"] for entry in classes])
    axes.set_ylabel("compressibility, % (1 - bits/8)")
    axes.set_title(title)
    axes.grid(axis="y", alpha=0.3)
    axes.legend(fontsize=8, ncols=2)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
