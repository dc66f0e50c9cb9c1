"""linkcodec: lossless codec blocks for ML tensor traffic on chip links.

The package is split in three, each a top-level folder of the repository:

- :mod:`linkcodec.golden` -- NumPy reference models, the truth the hardware is held to;
- :mod:`linkcodec.rtl` -- Amaranth HDL components;
- :mod:`linkcodec.sim` -- cocotb testbenches run under Verilator.
"""

__version__ = "0.1.0"
