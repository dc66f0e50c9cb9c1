"""Symbol distributions: the check every codec applies to a PMF or a histogram.

A codec is built from a PMF: probabilities or counts, one per symbol. Both QLC
(:func:`~linkcodec.golden.qlc.rank_table`, :func:`~linkcodec.golden.qlc.optimal_layout`)
and Huffman (:func:`~linkcodec.golden.huffman.code_lengths`,
:func:`~linkcodec.golden.huffman.smooth_pmf`) take one through :func:`check_pmf`, so they
accept and refuse the same inputs with the same messages.
"""

import numpy as np

__all__ = ["check_pmf"]


def check_pmf(pmf, size=None, *, error=ValueError):
    """``pmf`` (probabilities or counts, one per symbol) checked: a 1-D array of finite
    numbers >= 0, not all zero, of ``size`` entries (any non-zero number if None).

    Integer arrays are returned as they are and float arrays as float64, not normalised:
    a histogram of counts stays integral, so sums over it stay exact. A bad input raises
    ``error`` (a :class:`ValueError` subclass, the codec's own) with a message that names
    the problem and, for a bad entry, the symbol.
    """
    array = np.asarray(pmf)
    if array.dtype == np.bool_ or not (np.issubdtype(array.dtype, np.integer)
                                       or np.issubdtype(array.dtype, np.floating)):
        raise error(f"a PMF holds numbers (probabilities or counts), not {array.dtype}")
    if size is not None and array.shape != (size,):
        raise error(f"a PMF has {size} entries, one per symbol, not shape {array.shape}")
    if array.ndim != 1 or array.size == 0:
        raise error(f"a PMF is a non-empty 1-D array, one entry per symbol, not shape "
                    f"{array.shape}")
    if np.issubdtype(array.dtype, np.floating):
        array = array.astype(np.float64, copy=False)
        bad = np.flatnonzero(~np.isfinite(array))
        if bad.size:
            raise error(f"PMF entry of symbol {bad[0]} is {array[bad[0]]}; entries must be "
                        f"finite")
    bad = np.flatnonzero(array < 0)
    if bad.size:
        raise error(f"PMF entry of symbol {bad[0]} is {array[bad[0]]}; entries must be >= 0")
    if not array.any():
        raise error("PMF is all zero: at least one symbol needs a nonzero weight")
    return array
