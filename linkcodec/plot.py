"""The picture behind ``linkcodec analyze --plot``: PMF and code lengths by rank."""

import numpy as np

__all__ = ["plot_analysis"]


def plot_analysis(shards, path, *, codebook=None):
    """Draw the pooled PMF of ``shards`` (by rank, log scale) and, below it, each codec's
    code length for every rank, against the ideal ``-log2 p``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
