"""What the harness needs to know about a block: one description per block.

A :class:`BlockDescription` says, in one place, how to build a block (lanes, word width,
reset-time tables), how the golden model turns a frame into the beats the block takes
and the beats it must give, and which config writes load its tables. The harness
(:mod:`linkcodec.sim.harness`) reads everything else from the component itself: its
stream ports, their directions and payload layouts come from its signature. Adding a
block to the harness means writing its description, nothing more.
"""

import numpy as np

from ..payload import check_lanes

__all__ = ["BlockDescription"]


class BlockDescription:
    """Base class of block descriptions; a subclass sets the class attributes and
    overrides :meth:`build` and :meth:`frame_io` (and :meth:`config_writes` if the block
    has tables that load at run time).

    ``tables`` is whatever object holds a block's tables (a
    :class:`~linkcodec.golden.qlc.QlcCode` for QLC); ``None`` means the block's default.
    """

    #: The name the command line and tests use, e.g. ``"qlc-decoder"``.
    name = None
    #: Stem of the generated Verilog module's name, e.g. ``"linkcodec_qlc_decoder"``.
    module = None
    #: The lane counts the block supports.
    lanes = (1, 2, 4, 8, 16)
    #: The dtype of a frame's symbols.
    symbol_dtype = np.uint8
    #: The config port(s) that :meth:`config_writes` writes, loaded before any traffic.
    config_ports = ()
    #: The options of ``linkcodec sim`` that pick this block's tables: ``{name: argparse
    #: keyword arguments}``, given on the command line as ``--name``. The command line
    #: offers every option of every registered block and refuses, for each block, the
    #: ones it does not declare; :meth:`sim_tables` reads them.
    sim_options = {}
    #: Whether :mod:`linkcodec.sim.fuzz` (``linkcodec sim --fuzz``) can fuzz the block: a
    #: decoder of words on ``i`` into symbol beats on ``o``, whose tables have ``encode``
    #: and ``decode`` as :func:`linkcodec.golden.words.decode_words` takes them.
    fuzzable = False
    #: Whether the block promises that its inputs' ``ready`` never depends on its
    #: outputs' ``ready`` in the same cycle (no combinational path from one to the other),
    #: as every codec block does; the contract suite checks it where promised.
    ready_independent = False
    #: For an encoder that cannot yet drive its own decoder directly, why (a known
    #: limit, documented; the contract suite expects that pair to fail until it is
    #: mended); None when it can.
    pair_limit = None
    #: The fewest symbols a cycle, per lane, the block promises with no stalls on real
    #: data (the contract suite checks it; README and docs quote it).
    min_symbols_per_lane = 0.99

    @property
    def value_bits(self):
        """Bits of one uncoded symbol (value): 8 for e4m3, 16 for bf16."""
        return np.dtype(self.symbol_dtype).itemsize * 8

    def check_lanes(self, lanes):
        check_lanes(lanes)
        if lanes not in self.lanes:
            raise ValueError(f"{self.name} takes lanes {', '.join(map(str, self.lanes))}, "
                             f"not {lanes}")
        return lanes

    def default_word_width(self, lanes):
        """The coded word width the block gets unless told otherwise (``None`` if the
        block has no coded words)."""
        return None

    def min_word_width(self, lanes):
        """The narrowest coded word the block takes at ``lanes`` (8 unless it needs more;
        ``None`` if the block has no coded words)."""
        return None if self.default_word_width(lanes) is None else 8

    def default_tables(self):
        """The tables the block holds at reset unless told otherwise."""
        return None

    def latency_frame(self, lanes):
        """The frame the ``latency`` property is measured on (first input transfer to
        first output transfer, no stalls): by default one beat of ``lanes`` symbols,
        whose output ends the frame. A decoder whose latency assumes the next word right
        behind the first gives a longer frame."""
        rng = np.random.default_rng(lanes)
        top = np.iinfo(np.dtype(self.symbol_dtype)).max
        return rng.integers(0, top + 1, lanes).astype(self.symbol_dtype)

    def example_tables(self):
        """Tables other than the reset-time ones (where the block has tables), for tests
        that load tables at run time: a skewed made-up source's, so that short and long
        codes both show up. By default the default tables."""
        return self.default_tables()

    def fitted_tables(self, frames):
        """The tables fitted to ``frames`` (arrays of :attr:`symbol_dtype`, pooled): what
        the block runs with when it is measured on real data."""
        raise NotImplementedError

    def sim_tables(self, frames, options):
        """``(tables, described)``: the tables ``linkcodec sim`` runs the block with on
        ``frames`` (one array a FILE; none under ``--fuzz`` without FILEs) and
        ``options`` (``{name: value or None}`` for :attr:`sim_options`), and what its
        report says about them (a ``dict``). By default :meth:`fitted_tables` of the
        frames, or the default tables when there are none."""
        if not frames:
            return self.default_tables(), {}
        return self.fitted_tables(frames), {}

    def smallest_variant(self):
        """The description of the block's smallest tables, where its tables' size is a
        parameter (the proofs of tests/test_formal.py take it: a memory's depth is what
        bounded model checking pays for most); this one by default."""
        return self

    def variant(self, options):
        """The description ``linkcodec sim`` runs for ``options`` (``{name: value or
        None}`` for :attr:`sim_options`): this one, unless the block comes in variants
        that some tables need (the Huffman encoder of a bf16 codebook's split)."""
        return self

    def build(self, *, lanes, word_width=None, tables=None):
        """The :class:`~amaranth.lib.wiring.Component`, with ``tables`` at reset."""
        raise NotImplementedError

    def module_name(self, *, lanes, word_width=None):
        """A stable Verilog module name that says what the module is: the block, its
        lanes and, where it is not the default, its word width."""
        name = f"{self.module}_l{lanes}"
        if word_width is not None and word_width != self.default_word_width(lanes):
            name += f"_w{word_width}"
        return name

    def prepare(self, frame):
        """``frame`` as a flat array of :attr:`symbol_dtype`; anything else is refused."""
        array = np.asarray(frame)
        if array.dtype != self.symbol_dtype:
            raise ValueError(f"{self.name} takes frames of {np.dtype(self.symbol_dtype)} "
                             f"symbols, not {array.dtype}")
        return array.reshape(-1)

    def frame_io(self, frame, *, lanes, word_width, tables):
        """The golden model's view of one frame: ``(inputs, expected)``, each a ``dict``
        from a stream port's name to its beats (dicts of the port's payload layout)."""
        raise NotImplementedError

    def config_writes(self, tables):
        """``dict`` from config port name to the writes (dicts) that load ``tables``."""
        return {}
