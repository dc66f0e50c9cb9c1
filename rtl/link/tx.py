""":class:`LinkTx`: the streams, the table unit that sends tables in band, and the
link side that takes the streams' flits round robin."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ...golden.link import DEFAULT_FLIT_BYTES, HEADER_BYTES
from .. import crc
from ..bitpack import mux_tree
from ..payload import symbol_layout, word_layout
from ..retry import RetryTx, ack_layout
from ..table_loader import image_byte_layout
from .common import (
    DEFAULT_ACK_LATENCY,
    DEFAULT_LINK_BYTES,
    IMAGE_MAX,
    LINK_GROUP,
    LINK_OUT_DEPTH,
    STATUS_CYCLES,
    TABLE_LEAD_CYCLES,
    TX_TABLE_STATES,
    LinkBlock,
    byte_enables,
    checked_params,
    flit_source,
    header_bits,
    header_fields,
    index_of_one_hot,
    shaped_row,
    sliced_loader,
    table_result_layout,
)
from .tx_stream import TxStream


class TxTables(wiring.Component):
    """:class:`LinkTx`'s table image: the bytes from ``i_table`` (at most
    :data:`IMAGE_MAX`; ``length`` says one more if there were more), read by the loader
    through ``read_addr``/``read_data``; on ``send``, the image as table flits of link
    bank ``bank`` (pieces of the flit body, as the golden writer cuts them), which the
    link side takes as it takes a stream's full flits; ``sent`` pulses once the last
    has gone; ``done`` frees the image for the next."""

    def __init__(self, params):
        self._params = params
        super().__init__({
            "i": In(stream.Signature(image_byte_layout)),
            "have": Out(1),
            "length": Out(range(IMAGE_MAX + 2)),
            "read_addr": In(range(IMAGE_MAX + 1)),
            "read_data": Out(8),
            "send": In(1),
            "bank": In(1),
            "sent": Out(1),
            "done": In(1),
            **flit_source(params),
        })

    def elaborate(self, platform):
        m = Module()
        p = self._params
        m.submodules.image = image = Memory(shape=unsigned(8), depth=IMAGE_MAX, init=[])
        write = image.write_port()
        loader_read = image.read_port(domain="comb")
        copy_read = image.read_port(domain="comb")
        take = self.i.valid & self.i.ready
        m.d.comb += [self.i.ready.eq(~self.have),
                     write.addr.eq(self.length), write.data.eq(self.i.payload.data),
                     write.en.eq(take & ~self.i.payload.abort & (self.length < IMAGE_MAX)),
                     loader_read.addr.eq(self.read_addr), self.read_data.eq(loader_read.data)]
        with m.If(take):
            with m.If(self.i.payload.abort):
                m.d.sync += [self.have.eq(1), self.length.eq(IMAGE_MAX + 1)]
            with m.Else():
                with m.If(self.length <= IMAGE_MAX):
                    m.d.sync += self.length.eq(self.length + 1)
                with m.If(self.i.payload.last):
                    m.d.sync += self.have.eq(1)
        with m.If(self.done):
            m.d.sync += [self.have.eq(0), self.length.eq(0)]

        # The table flits: a piece's bytes copied a byte a cycle into a flit of rows
        # (read as a stream's are: a row a cycle after its address).
        body_bytes = p.fmt.body_bytes
        rows, piece_bytes = p.pieces, p.piece_bytes
        m.submodules.flit = flit = Memory(shape=unsigned(p.piece_bits), depth=rows, init=[])
        fill = flit.write_port(granularity=8)
        read = flit.read_port()
        start = Signal(range(IMAGE_MAX + 1))      # the piece's first image byte
        copy = Signal(range(IMAGE_MAX + 1))       # the image byte copied next
        position = Signal(range(p.flit_bytes + 1))
        copying = Signal()
        coded_id = p.fmt.codec_id
        header = Signal(32)
        end = Signal(range(p.flit_bytes + 1))
        m.d.comb += self.row_data.eq(shaped_row(
            m, p, read_data=read.data, row=self.row, header=header, end=end,
            number=Const(0, 8)))                  # (a table flit's number is 0)
        length = Mux(self.length > IMAGE_MAX, IMAGE_MAX, self.length)
        # The piece's end (past its last image byte) and whether it is the image's last,
        # registers set with the piece's start.
        piece_end = Signal(range(IMAGE_MAX + 1))
        piece_last = Signal()

        def start_piece(first):
            reach = first + body_bytes
            return [start.eq(first), piece_end.eq(Mux(reach < length, reach, length)),
                    piece_last.eq(reach >= length)]

        m.d.comb += [copy_read.addr.eq(copy),
                     fill.addr.eq(position // piece_bytes),
                     fill.data.eq(Cat(*[copy_read.data] * piece_bytes)),
                     read.addr.eq(self.row)]
        with m.If(self.send):
            m.d.sync += [copying.eq(1), *start_piece(Const(0)), copy.eq(0),
                         position.eq(HEADER_BYTES)]
        with m.If(copying):
            with m.If(copy != piece_end):
                m.d.comb += fill.en.eq(byte_enables(position, 1, piece_bytes))
                m.d.sync += [copy.eq(copy + 1), position.eq(position + 1)]
            with m.Else():
                m.d.sync += [
                    copying.eq(0), self.flit_valid.eq(1),
                    header.eq(header_bits(codec=Const(coded_id, 2), bank=self.bank,
                                      last=piece_last, stream=0, count=start,
                                      bits=(piece_end - start) << 3, table=1)),
                    end.eq(position),
                ]
        with m.If(self.flit_taken):
            m.d.sync += self.flit_valid.eq(0)
            with m.If(header_fields(header).last):
                m.d.comb += self.sent.eq(1)
            with m.Else():
                m.d.sync += [copying.eq(1), *start_piece(copy), position.eq(HEADER_BYTES)]
        return m


class LinkTx(LinkBlock):
    """``streams`` symbol streams in, flits out on one link word (see the module's
    docstring).

    Parameters (keyword-only): ``codec`` (``"qlc"``, ``"huffman"`` or ``"exponent"``),
    ``streams`` (1 to 16), ``lanes`` (1), ``flit_bytes`` (64, 128 or 256), ``link_bytes`` (a power of two
    from 8 to ``flit_bytes``; default 64), ``tables`` (the code both ends hold; default
    the codec's default), ``tables_in_band`` (default ``True``; ``False``: the tables
    are fixed at elaboration, there is no ``i_table`` or ``o_table``, no table unit and
    no loader, and synthesis folds every table into constants: less area and a faster
    clock, for a link whose code never changes), ``retry_depth`` (default 0: no retry;
    else go-back-N with that many flits kept, one of
    :data:`~linkcodec.rtl.retry.RETRY_DEPTHS`: each flit numbered, and an ``i_ack``
    port for ``LinkRx``'s ``o_ack``, see :mod:`linkcodec.rtl.retry`) and
    ``ack_latency`` (with retry: cycles without an ack, while flits are out, before it
    sends again from the oldest; default 128), ``stream_numbers`` (default ``None``:
    on without retry, off with it; each data flit numbered on its stream, which LinkRx's
    must match; see the module's docstring) and ``status_cycles`` (with stream numbers:
    a stream idle that long since its last flit sends a status flit, and again after
    each such span while it stays idle; default :data:`STATUS_CYCLES`, 16 to 65536).

    Ports: ``i_s0`` .. ``i_s{streams-1}`` (:func:`symbol_layout` beats of 1 lane, 16-bit
    bf16 values for the exponent codec, frames ended by ``last``), ``o`` (:func:`word_layout` of ``8 * link_bytes`` bits: ``data``
    (the flit's first byte in the top bits), ``bits`` (always the full word) and
    ``last`` on a flit's final word), ``i_table`` (a table image, a byte a beat:
    :data:`~linkcodec.rtl.table_loader.image_byte_layout`; taken while no image is in
    hand) and ``o_table`` (:data:`table_result_layout`, a beat an image; the next image
    is taken once it has gone). Tables in band: see the module's docstring. Above
    :data:`LINK_GROUP` streams the loader's writes reach each stream through a register,
    and the streams' ``ready`` and whether every stream is clear of the bank to load
    reach it through two (a load takes three cycles more to start and a cycle more to
    land; the link's symbols none). A stream's switch to a new table reaches the table
    unit through a register (a load waiting for it starts a cycle later).

    Throughput: a symbol a cycle a stream while the flits leave the link side room: it
    moves ``min(LINK_PIECE_BYTES, link_bytes)`` bytes (16) a cycle, flit after flit with
    no idle cycle between, so ``o`` carries a word every ``link_bytes / 16`` cycles at
    most (16 streams of QLC on real tensors need about 15 bytes a cycle; 16 streams of
    incompressible bytes need 16 and their flits' overhead, and slow to about 94 %). The
    cutter spends one more cycle a flit. Latency: a flit leaves once it is full (or its
    frame ended), so a symbol waits for the rest of its flit: about a flit's worth of
    symbols, plus the input stage (1 cycle), the encoder's latency, the chunk's head queue
    and write register (3), the flit's finish (1), the round robin's pick, made ahead from
    registers (2 when the link side was idle), the flit's rows up to the symbol's word (up
    to ``flit_bytes / 16``), and the link side's pipeline (the CRC's stage included) and
    output queue (7); with retry, :class:`~linkcodec.rtl.retry.RetryTx` (``retry``) holds
    a flit until its last word is in and adds 2 cycles to that word;
    ``linkcodec sim link`` measures it. Backpressure on ``o`` fills the output queue and
    holds the link side; each stream then fills its two flits and its chunk queue, and its
    ``i.ready`` falls.
    Each stream's ``i.ready`` is a flip-flop (its input stage's): it depends neither on
    ``i.payload`` nor on ``o.ready``.
    Every byte is a valid symbol; a bad table image is refused (``o_table``'s
    ``error``) and changes nothing. Reset clears every queue and flit in flight and the
    image in hand; the tables, and which bank each stream's table is in, stay.
    """

    def __init__(self, *, codec="qlc", streams=1, lanes=1, flit_bytes=DEFAULT_FLIT_BYTES,
                 link_bytes=DEFAULT_LINK_BYTES, tables=None, tables_in_band=True,
                 retry_depth=0, ack_latency=DEFAULT_ACK_LATENCY, stream_numbers=None,
                 status_cycles=STATUS_CYCLES):
        params = checked_params(self, codec=codec, streams=streams, lanes=lanes,
                                flit_bytes=flit_bytes, link_bytes=link_bytes, tables=tables,
                                tables_in_band=tables_in_band, retry_depth=retry_depth,
                                ack_latency=ack_latency, stream_numbers=stream_numbers,
                                status_cycles=status_cycles)
        members = {f"i_s{index}": In(stream.Signature(
            symbol_layout(1, width=params.symbol_bits))) for index in range(streams)}
        if tables_in_band:
            members["i_table"] = In(stream.Signature(image_byte_layout))
        members["o"] = Out(stream.Signature(word_layout(params.row_bits)))
        if tables_in_band:
            members["o_table"] = Out(stream.Signature(table_result_layout))
        if retry_depth:
            members["i_ack"] = In(ack_layout)
        #: The retry buffer behind the flit maker (with retry; else None).
        self.retry = RetryTx(flit_bytes=flit_bytes, link_bytes=link_bytes,
                             crc_bytes=params.fmt.crc_bytes, depth=retry_depth,
                             ack_latency=ack_latency) if retry_depth else None
        if self.retry is not None:       # used when this block is; unused, this one warns
            self.retry._MustUse__silence = True
        super().__init__(params, members)

    def elaborate(self, platform):
        m = Module()
        p = self._params
        link_o = self.o                   # the flits, numbered and kept for retry if so
        if self.retry is not None:
            m.submodules.retry = retry = self.retry
            wiring.connect(m, retry.o, wiring.flipped(self.o))
            m.d.comb += retry.i_ack.eq(self.i_ack)
            link_o = retry.i
        units = []
        for index in range(p.streams):
            unit = TxStream(p, index)
            m.submodules[f"stream{index}"] = unit
            wiring.connect(m, wiring.flipped(getattr(self, f"i_s{index}")), unit.i)
            units.append(unit)
        if p.tables_in_band:
            streams = list(units)
            m.submodules.tables = tables = TxTables(p)
            wiring.connect(m, wiring.flipped(self.i_table), tables.i)
            units.append(tables)          # its table flits share the link side
            self._tables_in_band(m, streams, tables)
        # (Else each stream's ``table`` and ``fresh`` stay 0: its tables are constants.)

        # The link side is a pipeline that never stalls, a piece (a buffer row of
        # ``piece_bytes``) a cycle, in front of an output queue of link words whose free
        # places it counts (a word's place is taken with its first piece):
        #   issue:    the round robin's stream and piece; each stream registers that
        #             row's read and the controls that shape it (so the row address and
        #             nothing else fans out to them; each shapes its own rows:
        #             shaped_row); the next stream is picked ahead, from registers,
        #             while the flit before is sent, so flits follow each other with no
        #             idle cycle;
        #   gather:   each group of 4 streams' shaped pieces goes through a 4-way select
        #             into a register of the group's;
        #   select:   one group's piece into a register;
        #   seal:     below; the pieces of a link word collect in a register, and the
        #             word goes into the queue with its last piece.
        link_bytes, rows = p.link_bytes, p.pieces
        piece_bytes = p.piece_bytes
        per_word = link_bytes // piece_bytes
        count = len(units)
        groups = [units[start:start + LINK_GROUP] for start in range(0, count, LINK_GROUP)]

        m.submodules.out = out_queue = SyncFIFOBuffered(width=link_o.payload.shape().size,
                                                        depth=LINK_OUT_DEPTH)
        m.d.comb += [link_o.valid.eq(out_queue.r_rdy), link_o.payload.eq(out_queue.r_data),
                     out_queue.r_en.eq(link_o.ready)]
        pending = Signal(range(LINK_OUT_DEPTH + 1))     # words issued, not yet taken
        issue = Signal()                                # a piece goes in the pipeline
        word_start = Signal()                           # ... the first of its word
        m.d.sync += pending.eq(pending + (issue & word_start)
                               - (link_o.valid & link_o.ready))

        current = Signal(range(max(2, count)))
        sending = Signal()
        row = Signal(range(rows))
        for unit in units:
            m.d.comb += unit.row.eq(row)
        m.d.comb += word_start.eq(row[:(per_word - 1).bit_length()] == 0
                                  if per_word > 1 else 1)

        # The round robin, picked ahead from registers: ``seen``, the sources with a full
        # flit a cycle ago (the one whose flit was taken then left out, as its next slot
        # shows only now), and the current source (one-hot, and the sources above it).
        # ``pick`` is the lowest source of ``seen`` above the current one, else the
        # lowest of all, the current one left out while its flit is sent (``x ^ -x``:
        # the bits above the lowest set one). A pick made two cycles ago is still good
        # when it is taken: a source's flit goes only while it is the current one, and a
        # flit takes 4 rows or more.
        taken = Signal(count)
        seen = Signal(count)
        current_hot = Signal(count, init=1)
        current_above = Signal(count, init=((1 << count) - 2))
        m.d.sync += seen.eq(Cat(*[unit.flit_valid for unit in units]) & ~taken)
        # (Both pools' picks are made at once, and the one taken is selected after.)
        others = seen & ~Mux(sending, current_hot, 0)
        above = others & current_above
        use_above = above.any()
        picks = [((pool & -pool)[:count], (pool ^ -pool)[:count]) for pool in (above, others)]
        pick = Signal.like(current)
        pick_hot = Signal(count)
        pick_above = Signal(count)
        pick_valid = Signal()
        m.d.sync += [
            pick.eq(Mux(use_above, index_of_one_hot(picks[0][0]),
                        index_of_one_hot(picks[1][0]))),
            pick_hot.eq(Mux(use_above, picks[0][0], picks[1][0])),
            pick_above.eq(Mux(use_above, picks[0][1], picks[1][1])),
            pick_valid.eq(others.any()),
        ]

        meta_fields = {"valid": 1, "current": range(max(2, count)), "last": 1, "final": 1,
                       "row": range(rows)}
        meta_layout = data.StructLayout(meta_fields)
        meta = [Signal(meta_layout, name=f"meta{n}") for n in range(5)]
        following = [current.eq(pick), current_hot.eq(pick_hot),
                     current_above.eq(pick_above)]
        with m.If(~sending):
            with m.If(pick_valid):
                m.d.sync += [*following, sending.eq(1), row.eq(0)]
        with m.Elif(~word_start | (pending < LINK_OUT_DEPTH)):
            m.d.comb += [
                issue.eq(1),
                meta[0].valid.eq(1), meta[0].current.eq(current),
                meta[0].last.eq(row == rows - 1),
                meta[0].final.eq(row[:(per_word - 1).bit_length()] == per_word - 1
                                 if per_word > 1 else 1),
                meta[0].row.eq(row),
            ]
            m.d.sync += row.eq(row + 1)
            with m.If(row == rows - 1):
                m.d.comb += taken.eq(current_hot)
                for index, unit in enumerate(units):
                    m.d.comb += unit.flit_taken.eq(current_hot[index])
                m.d.sync += row.eq(0)
                with m.If(pick_valid):
                    m.d.sync += following
                with m.Else():
                    m.d.sync += sending.eq(0)
        m.d.sync += [later.eq(earlier) for earlier, later in zip(meta, meta[1:])]

        self._seal(m, groups, meta, out_queue, link_o.payload.shape())
        return m

    def _seal(self, m, groups, meta, out_queue, word_shape):
        """The link side's last three stages (the piece of ``meta[1]``'s stream and row in
        the pipeline): *gather*, each group of streams' pieces into a register; *select*,
        one group's into a register; *seal*, the piece and its CRC part into a register,
        the flit's CRC field in its last piece, and each link word into ``out_queue``
        with its last piece."""
        p = self._params
        piece_bytes, piece_bits = p.piece_bytes, p.piece_bits
        per_word = p.link_bytes // piece_bytes
        group_bits = (LINK_GROUP - 1).bit_length()
        gathered = [Signal(piece_bits, name=f"gathered{index}")
                    for index in range(len(groups))]
        for group, register in zip(groups, gathered):
            m.d.sync += register.eq(mux_tree([unit.row_data for unit in group],
                                             meta[1].current, piece_bits))
        selected = Signal(piece_bits)
        if len(gathered) == 1:
            m.d.sync += selected.eq(gathered[0])
        else:
            m.d.sync += selected.eq(mux_tree(gathered, meta[2].current >> group_bits,
                                             piece_bits))
        piece = selected                  # with meta[3]
        # seal: the piece and its CRC part (the register it leaves alone) into a
        # register; then each half's CRC register takes the part, and the flit's last
        # piece gets the CRC field (zero until then, as the part took it).
        sealing = meta[4]
        sealing_piece = Signal(piece_bits)
        part = Signal(16)
        m.d.sync += [sealing_piece.eq(piece), part.eq(crc.crc_of_bytes(piece, piece_bytes))]
        crcs = crc.flit_registers(m, p.flit_bytes, piece_bytes, part, sealing.valid, sealing.row)
        sealed = Mux(sealing.last,
                     Cat(crc.crc_field(crcs), sealing_piece[8 * p.fmt.crc_bytes:]),
                     sealing_piece)
        word = Signal(word_shape)
        if per_word > 1:
            # The word's earlier pieces, the first in the top bits.
            collected = Signal(piece_bits * (per_word - 1))
            with m.If(sealing.valid):
                m.d.sync += collected.eq(Cat(sealed, collected)[:len(collected)])
            m.d.comb += word.data.eq(Cat(sealed, collected))
        else:
            m.d.comb += word.data.eq(sealed)
        m.d.comb += [word.bits.eq(p.row_bits), word.last.eq(sealing.last),
                     out_queue.w_data.eq(word),
                     out_queue.w_en.eq(sealing.valid & sealing.final)]

    def _tables_in_band(self, m, streams, tables):
        """A table image from ``i_table`` into every stream's idle banks, then onto the
        link as table flits, then taken by each stream at its next frame."""
        p = self._params
        current = Signal(reset_less=True)         # the link bank of the newest table
        fresh = Signal(p.streams, reset_less=True)   # streams yet to take it
        target = ~current                         # the bank loaded next (until "send" ends)
        # (A state register, not m.FSM: its case statement has values no state takes,
        # which Verilator's lint flags.)
        state = Signal(range(len(TX_TABLE_STATES)))
        feeding, writes, end_beat = sliced_loader(m, p.codec, p.hardware.tx_loader_block)
        flags = [~unit.busy.bit_select(target, 1) & unit.caught_up for unit in streams]
        if p.table_registers:
            # Gathered through registers, a group of LINK_GROUP streams and then the
            # groups (their AND across the die into "wait" was the 16-stream critical
            # path): two cycles late, which is safe, as once every stream is clear of
            # the target bank it stays so until "lead" ends.
            groups = [Signal(name=f"clear_group{start // LINK_GROUP}")
                      for start in range(0, len(flags), LINK_GROUP)]
            m.d.sync += [group.eq(Cat(*flags[LINK_GROUP * index:][:LINK_GROUP]).all())
                         for index, group in enumerate(groups)]
            clear = Signal()
            m.d.sync += clear.eq(Cat(*groups).all() & (fresh == 0))
        else:
            clear = Cat(*flags).all() & (fresh == 0)
        if p.table_registers:
            # Every stream ready for a write, gathered as "clear" is, two cycles late (in
            # "write" a stream's ``ready`` only rises: none has a fresh table, so none
            # can start a switch; a stream's ``ready`` into one gather across the die
            # was the 16-stream critical path).
            ready_groups = [Signal(name=f"ready_group{start // LINK_GROUP}")
                            for start in range(0, len(streams), LINK_GROUP)]
            m.d.sync += [group.eq(Cat(*[unit.table_ready for unit in
                                        streams[LINK_GROUP * index:][:LINK_GROUP]]).all())
                         for index, group in enumerate(ready_groups)]
            ready = Signal()
            m.d.sync += ready.eq(Cat(*ready_groups).all()
                                 & (state == TX_TABLE_STATES.index("write")))
        else:
            ready = Cat(*[unit.table_ready for unit in streams]).all()
        feed = Signal(range(IMAGE_MAX + 1))
        result = Signal(table_result_layout)
        delay = Signal(range(TABLE_LEAD_CYCLES + 1))
        # (Each stream's ``fresh`` straight from its register: the table state's decode
        # fanned out to every stream's length select was the 16-stream critical path.)
        for index, unit in enumerate(streams):
            m.d.comb += [unit.fresh.eq(fresh[index]), unit.fresh_bank.eq(current),
                         unit.table.payload.eq(writes.payload)]
            with m.If(unit.switched):
                m.d.sync += fresh[index].eq(0)
        m.d.comb += [tables.bank.eq(target), tables.read_addr.eq(feed),
                     feeding.payload.data.eq(tables.read_data),
                     feeding.payload.last.eq(feed + 1 == tables.length),
                     feeding.payload.abort.eq(feed == IMAGE_MAX),
                     self.o_table.payload.eq(result)]
        with m.If(state == TX_TABLE_STATES.index("idle")):
            with m.If(tables.have):
                m.d.sync += state.eq(TX_TABLE_STATES.index("wait"))
        with m.Elif(state == TX_TABLE_STATES.index("wait")):
            # Every stream has taken the newest table (an idle one at once, one in a
            # frame at its end) and every flit coded with the target bank's old table
            # has been sent: the load may start. It stays so until "lead" ends (no
            # stream has a table to take; each codes with the newest, the other bank).
            with m.If(clear):
                m.d.sync += [feed.eq(0), state.eq(TX_TABLE_STATES.index("write"))]
        with m.Elif(state == TX_TABLE_STATES.index("write")):
            m.d.comb += feeding.valid.eq(feed < tables.length)
            with m.If(feeding.valid & feeding.ready):
                m.d.sync += feed.eq(feed + 1)
            offer = writes.valid & ~end_beat
            if p.table_registers:
                offer &= ready
            for unit in streams:
                m.d.comb += unit.table.valid.eq(offer)
            m.d.comb += writes.ready.eq(end_beat | ready)
            with m.If(writes.valid & end_beat):
                m.d.sync += [result.data.eq(target), result.last.eq(1),
                             result.error.eq(writes.payload.error)]
                with m.If(writes.payload.error):
                    m.d.sync += state.eq(TX_TABLE_STATES.index("report"))
                with m.Else():
                    m.d.comb += tables.send.eq(1)
                    m.d.sync += state.eq(TX_TABLE_STATES.index("send"))
        with m.Elif(state == TX_TABLE_STATES.index("send")):
            with m.If(tables.sent):
                m.d.sync += [delay.eq(TABLE_LEAD_CYCLES),
                             state.eq(TX_TABLE_STATES.index("lead"))]
        with m.Elif(state == TX_TABLE_STATES.index("lead")):
            # The table flits are out; the table becomes the newest, for the streams to
            # take, only once the receiver has had the time to load it, so it holds no
            # flit for it. (A reset in the lead loses the table: the streams stay on
            # theirs, and the next load goes into the same bank again.)
            m.d.sync += delay.eq(delay - 1)
            with m.If(delay == 0):
                m.d.sync += [current.eq(target), fresh.eq((1 << p.streams) - 1),
                             state.eq(TX_TABLE_STATES.index("report"))]
        with m.Elif(state == TX_TABLE_STATES.index("report")):
            m.d.comb += self.o_table.valid.eq(1)
            with m.If(self.o_table.ready):
                m.d.comb += tables.done.eq(1)
                m.d.sync += state.eq(TX_TABLE_STATES.index("idle"))


# -- the receiver ------------------------------------------------------------------------
