"""One stream of :class:`~linkcodec.rtl.link.LinkTx`: its encoder, the cutter that
ends flits at symbol boundaries, and its two-flit buffer."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ...golden.exponent import VALUE_BITS
from ...golden.link import HEADER_BYTES
from ..payload import symbol_layout
from ..table import config_listener
from ..table_loader import loader_write_layout
from .common import (
    CHUNK_QUEUE_DEPTH,
    ESCAPE_QUEUE_DEPTH,
    byte_enables,
    flit_source,
    header_bits,
    header_fields,
    shaped_row,
)


class TxStream(wiring.Component):
    """One stream of :class:`LinkTx`: cutter, chunk queue, encoder and flit buffer.

    ``flit_valid`` says a full flit waits; the link side reads its rows (``row``;
    ``row_data`` a cycle later, shaped: :func:`shaped_row`) and pulses ``flit_taken``
    after its last row."""

    def __init__(self, params, index):
        self._params, self._index = params, index
        super().__init__({
            "i": In(stream.Signature(symbol_layout(1, width=params.symbol_bits))),
            **flit_source(params),
            # Tables in band (see LinkTx): the loader's writes into the idle banks of the
            # encoder and the cutter's lengths (taken when ``table_ready``); ``fresh``:
            # the idle banks hold a newer table, with link bank ``fresh_bank``, which the
            # stream takes between frames (``switched`` pulses the cycle after its encoder
            # has it); ``busy``: each link bank, whether a frame of it is in progress or a
            # flit of it not yet sent; ``caught_up``: the encoder is on the cutter's table.
            "table": In(config_listener(loader_write_layout(
                params.codec, params.hardware.tx_loader_block))),
            "table_ready": Out(1),
            "fresh": In(1),
            "fresh_bank": In(1),
            "switched": Out(1),
            "busy": Out(2),
            "caught_up": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        p = self._params
        fmt = p.fmt
        body_bits, raw_symbols = fmt.body_bits, fmt.raw_symbols
        coded_id = p.fmt.codec_id
        bf16 = p.hardware.two_streams
        symbol_bits = p.symbol_bits
        raw_shift = (8 * fmt.symbol_bytes).bit_length() - 1      # raw bits a symbol, log2

        # Above LINK_GROUP streams the loader's writes pass a register here, so their
        # broadcast to every stream ends at a flip-flop; the stream writes its idle banks
        # a cycle later, and its encoder is ready then (LinkTx offers writes only once
        # every stream is ready, and in "write" no stream can start a switch, so a
        # stream's ``ready`` only rises until the load ends).
        table_valid, table_write = self.table.valid, self.table.payload
        if p.table_registers:
            # Each stream's register takes the write with its own ``table_ready`` (as
            # every stream is ready while writes are offered), so synthesis keeps the
            # copies apart: the same register in every stream became one, driving the
            # 16 streams across the die (LinkTx's critical path, as LinkRx's at 5c4037a).
            table_valid, table_write = Signal(), Signal.like(self.table.payload)
            write_taken = self.table.valid & self.table_ready
            m.d.sync += table_valid.eq(write_taken)
            with m.If(write_taken):
                m.d.sync += table_write.eq(self.table.payload)

        # Banks. The encoder's active bank and the link bank of its table outlive a reset
        # (they name tables); the cutter runs ahead of the encoder, so it takes a fresh
        # table between frames (``ahead``) and the reader switches the encoder once it
        # has read every chunk cut before. A reset drops what is between them, and with
        # ``ahead`` the cutter's switch: the stream takes the table again.
        enc_active = Signal(reset_less=True)
        enc_tag = Signal(reset_less=True)
        ahead = Signal()
        ahead_tag = Signal()
        in_frame = Signal()
        cut_bank = Signal()
        cut_tag = Signal()
        m.d.comb += self.caught_up.eq(~ahead)

        # -- 1. the cutter ------------------------------------------------------------
        m.submodules.chunks = chunks = SyncFIFOBuffered(width=symbol_bits + 2,
                                                        depth=CHUNK_QUEUE_DEPTH)
        m.submodules.modes = modes = SyncFIFOBuffered(width=1, depth=4)     # 1 = raw
        info_layout = data.StructLayout({"raw": 1, "count": 12, "bits": 11, "last": 1,
                                         "bank": 1})
        # (QLC, Huffman: a chunk's info is written through a register, ``info_write``, so
        # the cut ends at a flip-flop and not in the queue's distributed RAM, which the
        # placer puts apart; the queue then keeps a place free for it: one more place.)
        registered_info = not bf16
        m.submodules.infos = infos = SyncFIFOBuffered(width=info_layout.size,
                                                      depth=5 if registered_info else 4)

        # The input stage: two entries (a main register and a skid, as RegisterSlice's),
        # so ``i.ready`` is a flip-flop; with a code lengths' memory each symbol's
        # lengths (both banks') are read as it enters, so the cutter's loop starts from
        # registers. A length written while its symbol waits in the stage is written
        # into the stage too (the read as it enters misses a write in the same cycle),
        # so a symbol taken after a table switch has the new table's length.
        stage_fields = {"symbol": symbol_bits, "has": 1, "last": 1}
        if not bf16:
            stage_fields["lengths"] = 10
        stage_layout = data.StructLayout(stage_fields)
        main, skid = Signal(stage_layout), Signal(stage_layout)
        main_valid, skid_valid = Signal(), Signal()
        incoming = Signal(stage_layout)
        consume = Signal()                # the cutter takes the main register's symbol
        m.d.comb += [incoming.symbol.eq(self.i.payload.symbols[0]),
                     incoming.has.eq(self.i.payload.count != 0),
                     incoming.last.eq(self.i.payload.last),
                     self.i.ready.eq(~skid_valid)]
        symbol, has = main.symbol, main.has
        acc = Signal(12)                  # bits of the chunk so far, coded
        count = Signal(12)                # its symbols
        coded = Signal()                  # its choice is known: coded
        new_acc = Signal(12)
        if bf16:
            # The chunk's values' bits (11 a value) and escapes' (8 an escape); the
            # flit's bits with one value more, not an escape (``plain``: the values'
            # rounded up to a byte, then the escapes') and with it an escape (``+ 8``);
            # and the values' bits, rounded, with two values more. All registers, so
            # that the next value's escape flag only selects between sums.
            def round_up(bits):
                return (bits + 7) & ~7

            value_bits = Signal(12)
            escape_bits = Signal(12)
            plain = Signal(12, init=round_up(VALUE_BITS))
            plain_escape = Signal(12, init=round_up(VALUE_BITS) + 8)
            rounded_next = Signal(12, init=round_up(2 * VALUE_BITS))
            restart = [value_bits.eq(0), escape_bits.eq(0), plain.eq(plain.init),
                       plain_escape.eq(plain_escape.init), rounded_next.eq(rounded_next.init)]
            step = []                     # (below, once the escape flag is known)
        else:
            restart, step = [], []
        # Between frames the cutter takes a fresh table at once. ``fresh`` is seen through
        # a register of the stream's own (cleared as the stream's encoder switches), so the
        # bank the cut is made with is one LUT of the stream's registers: ``fresh`` comes
        # from LinkTx's table unit, placed apart, and was on the 16-stream critical path.
        # ``switched`` goes out through a register (from a stream to the table unit's
        # ``fresh`` was the 16-stream critical path of LinkTx): its ``fresh`` clears a
        # cycle later, so the stream's copy holds it clear that cycle too. The register
        # outlives a reset, as the encoder's bank does: a switch in a reset's cycle
        # still clears the table unit's ``fresh``.
        fresh = Signal()
        switching = Signal()
        switched = Signal(reset_less=True)
        m.d.sync += [fresh.eq(self.fresh & ~switching & ~switched), switched.eq(switching)]
        m.d.comb += self.switched.eq(switched)
        take_fresh = ~in_frame & fresh & ~ahead
        # Chunks (their modes) cut so far, and at a fresh table's taking how many came
        # before it: the reader switches the encoder once it has read that many.
        written = Signal(4)
        switch_at = Signal(4)
        m.d.comb += [cut_bank.eq(Mux(take_fresh, ~enc_active, enc_active ^ ahead)),
                     cut_tag.eq(Mux(take_fresh, self.fresh_bank,
                                    Mux(ahead, ahead_tag, enc_tag)))]
        if bf16:
            # A value's 11 bits, and 8 more if its exponent is none of the table's 7 (an
            # escape); the values' bits are rounded up to a byte, the escapes follow
            # (the golden flit_bits). Both banks' exponents are registers, compared at
            # once and selected after the compare; loads write the idle bank.
            banks = [[Signal(8, init=value, reset_less=True, name=f"exponent{bank}_{code}")
                      for code, value in enumerate(p.tables.exponents)] for bank in range(2)]
            if p.tables_in_band:          # (else constants: nothing drives ``table``)
                for bank, exponents in enumerate(banks):
                    for code, register in enumerate(exponents):
                        with m.If(table_valid & (table_write.addr == code)
                                  & (enc_active != bank)):
                            m.d.sync += register.eq(table_write.data)
            field = symbol[VALUE_BITS - 4:VALUE_BITS + 4]        # bits 7..14
            escaped = [~Cat(*[field == register for register in exponents]).any()
                       for exponents in banks]
            # The flit's bits with the value, and whether they overflow the body, are
            # computed from the registers for both cases (an escape or not), and the
            # value's escape flag only selects: no adder or compare after the compares.
            escape = Mux(cut_bank, escaped[1], escaped[0])
            after = Signal(13)            # the flit's bits after one more value, plain
            rounded_after = Signal(13)    # ... the values' rounded bits after two more
            m.d.comb += [after.eq(rounded_next + escape_bits),
                         rounded_after.eq(value_bits + 3 * VALUE_BITS + 7),
                         new_acc.eq(Mux(escape, plain_escape, plain))]
            step += [value_bits.eq(value_bits + VALUE_BITS),
                     escape_bits.eq(escape_bits + Mux(escape, 8, 0)),
                     rounded_next.eq(Cat(Const(0, 3), rounded_after[3:])),
                     plain.eq(after + Mux(escape, 8, 0)),
                     plain_escape.eq(after + Mux(escape, 16, 8))]
        else:
            # The code lengths of both banks side by side (bank 1 in the top 5 bits), read
            # at once and selected after the read: the bank select is not in the read's
            # address.
            m.submodules.lengths = lengths = Memory(
                shape=unsigned(10), depth=256,
                init=[length | length << 5 for length in p.hardware.code_lengths(p.tables)])
            length_read = lengths.read_port(domain="comb")
            m.d.comb += [length_read.addr.eq(incoming.symbol),
                         incoming.lengths.eq(length_read.data)]
            fix = lambda entry: entry.lengths               # noqa: E731
            if p.tables_in_band:              # (else a ROM: nothing drives ``table``)
                length_write = lengths.write_port(granularity=5)
                length_written = table_valid & (table_write.addr < 256)
                m.d.comb += [length_write.addr.eq(table_write.addr[:8]),
                             length_write.data.eq(Cat(table_write.length, table_write.length)),
                             length_write.en.eq(Cat(length_written & enc_active,  # idle: 0
                                                    length_written & ~enc_active))]

                def fix(entry):
                    """``entry``'s lengths with this cycle's write in."""
                    hit = length_write.en & (entry.symbol == table_write.addr[:8]).replicate(2)
                    return Cat(*[Mux(hit[bank], table_write.length,
                                     entry.lengths[5 * bank:5 * bank + 5]) for bank in range(2)])
            # Both banks' sums and overflows, selected by the bank last: the bank (a
            # fresh table's taking between frames) is not in front of the add.
            sums = [Signal(12, name=f"sum{bank}") for bank in range(2)]
            overs = [Signal(name=f"over{bank}") for bank in range(2)]
            # The overflows from ``room`` (``body_bits - acc``, a register beside ``acc``;
            # below 0 while a chunk that is not yet coded runs over): a symbol's length
            # (5 bits) against it, with no add in front.
            room = Signal(signed(13), init=body_bits)
            for bank in range(2):
                bank_length = main.lengths[5 * bank:5 * bank + 5]
                m.d.comb += [sums[bank].eq(acc + bank_length),
                             overs[bank].eq(room[-1] | ((room[5:] == 0)
                                                        & (room[:5] < bank_length)))]
            m.d.comb += new_acc.eq(Mux(cut_bank, sums[1], sums[0]))
            restart.append(room.eq(room.init))
            step.append(room.eq(room - Mux(cut_bank, main.lengths[5:10], main.lengths[:5])))
        if registered_info:
            # room for this cycle's close besides the one in the register
            space = chunks.w_rdy & modes.w_rdy & (infos.w_level < infos.depth - 1)
        else:
            space = chunks.w_rdy & modes.w_rdy & infos.w_rdy
        m.d.sync += written.eq(written + modes.w_en)
        with m.If(consume):
            m.d.sync += in_frame.eq(~main.last)
        with m.If(take_fresh):
            m.d.sync += [ahead.eq(1), ahead_tag.eq(self.fresh_bank), switch_at.eq(written)]
        # Cut before this symbol: a coded chunk it would overflow, or the raw flit's
        # n + 1-th symbol that does not fit coded (then the chunk goes raw).
        if bf16:
            over = Mux(escape, plain_escape > body_bits, plain > body_bits)
        else:
            over = Mux(cut_bank, overs[1], overs[0])
        # (``at_raw``: ``count == raw_symbols``, a register set with ``count``.)
        at_raw = Signal()
        cut = has & Mux(coded, over, at_raw & over)
        decide = has & ~coded & at_raw & ~over
        entry = Signal(data.StructLayout({"symbol": symbol_bits, "has": 1, "end": 1}))
        info = Signal(info_layout)
        info_closed = Signal()            # a chunk closes this cycle (``info``: its record)
        if registered_info:
            info_write = Signal(info_layout)
            info_valid = Signal()
            m.d.sync += [info_write.eq(info), info_valid.eq(info_closed)]
            m.d.comb += [infos.w_data.eq(info_write), infos.w_en.eq(info_valid)]
        else:
            m.d.comb += [infos.w_data.eq(info), infos.w_en.eq(info_closed)]
        m.d.comb += [chunks.w_data.eq(entry),
                     consume.eq(main_valid & space & ~cut)]
        # The stage moves on as RegisterSlice's registers do, the cutter its reader.
        if not bf16:
            m.d.sync += [main.lengths.eq(fix(main)), skid.lengths.eq(fix(skid))]
        taken_in = Signal(stage_layout)
        m.d.comb += taken_in.eq(incoming)
        if not bf16:
            m.d.comb += taken_in.lengths.eq(fix(incoming))
        with m.If(consume | ~main_valid):
            with m.If(skid_valid):
                m.d.sync += [main.eq(skid), main_valid.eq(1), skid_valid.eq(0)]
                if not bf16:
                    m.d.sync += main.lengths.eq(fix(skid))
            with m.Else():
                m.d.sync += [main.eq(taken_in), main_valid.eq(self.i.valid)]
        with m.Elif(self.i.valid & ~skid_valid):
            m.d.sync += [skid.eq(taken_in), skid_valid.eq(1)]

        def close(*, raw, count_, bits_, last):
            m.d.comb += [info.raw.eq(raw), info.count.eq(count_), info.bits.eq(bits_),
                         info.last.eq(last), info.bank.eq(cut_tag), info_closed.eq(1)]
            m.d.sync += [acc.eq(0), count.eq(0), at_raw.eq(0), coded.eq(0), *restart]

        with m.If(main_valid & space):
            with m.If(cut):
                # A marker entry ends the chunk; the symbol is taken next cycle.
                m.d.comb += [entry.has.eq(0), entry.end.eq(1), chunks.w_en.eq(1)]
                m.d.comb += [modes.w_data.eq(1), modes.w_en.eq(~coded)]
                close(raw=~coded, count_=count, bits_=Mux(coded, acc, count << raw_shift),
                      last=0)
            with m.Else():
                m.d.comb += [entry.symbol.eq(symbol), entry.has.eq(has),
                             entry.end.eq(main.last), chunks.w_en.eq(has | main.last)]
                with m.If(has):
                    m.d.sync += [acc.eq(new_acc), count.eq(count + 1),
                                 at_raw.eq(count + 1 == raw_symbols), *step]
                with m.If(decide):
                    m.d.sync += coded.eq(1)
                    m.d.comb += [modes.w_data.eq(0), modes.w_en.eq(1)]
                with m.If(main.last):
                    now_coded = coded | decide
                    total = count + has
                    with m.If(~now_coded):
                        m.d.comb += [modes.w_data.eq(1), modes.w_en.eq(1)]
                    close(raw=~now_coded, count_=total,
                          bits_=Mux(now_coded, Mux(has, new_acc, acc), total << raw_shift),
                          last=1)

        # -- 2, 3. the reader: chunks to the encoder, or round it ----------------------
        m.submodules.encoder = encoder = p.hardware.block("encoder", p.tables)
        m.submodules.body_modes = body_modes = SyncFIFOBuffered(width=1, depth=4)
        reading = Signal()
        raw = Signal()
        head = Signal(entry.shape())
        # The block RAM's read data comes late in the cycle (ECP5's DP16KD without its
        # output register): a small queue of flip-flops behind it gives the reader its
        # head from a register.
        m.submodules.chunk_head = queued = SyncFIFOBuffered(width=symbol_bits + 2, depth=4)
        m.d.comb += [queued.w_data.eq(chunks.r_data), queued.w_en.eq(chunks.r_rdy),
                     chunks.r_en.eq(queued.w_rdy), head.eq(queued.r_data)]
        raw_valid = Signal()
        raw_ready = Signal()
        # The encoder takes a fresh table once it has read every chunk cut before the
        # cutter took it (the counters are registers: no path from the cutter here).
        popped = Signal(4)
        switch_offer = Signal()
        config = encoder.i_config
        with m.If(switch_offer):
            m.d.comb += [config.valid.eq(1),
                         config.payload.addr.eq(p.hardware.encoder_switch)]
        with m.Else():
            m.d.comb += [config.valid.eq(table_valid),
                         config.payload.addr.eq(table_write.addr),
                         config.payload.data.eq(table_write.data)]
        m.d.comb += self.table_ready.eq(~switch_offer & config.ready)
        with m.If(~reading):
            with m.If(ahead & (popped == switch_at)):
                m.d.comb += switch_offer.eq(1)
                with m.If(config.ready):
                    m.d.sync += [enc_active.eq(~enc_active), enc_tag.eq(ahead_tag),
                                 ahead.eq(0)]
                    m.d.comb += switching.eq(1)
            with m.Else():
                m.d.comb += [modes.r_en.eq(body_modes.w_rdy),
                             body_modes.w_en.eq(modes.r_rdy),
                             body_modes.w_data.eq(modes.r_data)]
                with m.If(modes.r_rdy & body_modes.w_rdy):
                    m.d.sync += [reading.eq(1), raw.eq(modes.r_data), popped.eq(popped + 1)]
        with m.Else():
            taken = Mux(raw, raw_ready, encoder.i.ready)
            m.d.comb += [
                encoder.i.valid.eq(~raw & queued.r_rdy),
                encoder.i.payload.symbols.eq(head.symbol),    # (the other lanes 0)
                encoder.i.payload.count.eq(head.has),
                encoder.i.payload.last.eq(head.end),
                raw_valid.eq(raw & queued.r_rdy),
                queued.r_en.eq(taken),
            ]
            with m.If(queued.r_rdy & taken & head.end):
                m.d.sync += reading.eq(0)

        # -- 4. the flit buffer: two flits of rows, each byte at its flit position ---------
        rows, piece_bytes = p.pieces, p.piece_bytes
        m.submodules.flits = flits = Memory(shape=unsigned(p.piece_bits), depth=2 * rows,
                                            init=[])
        write = flits.write_port(granularity=8)
        # Writes go through a register (address, a 16-bit word, a byte enable a column),
        # so the enables and data fan out to the buffer's distributed RAMs from flip-flops.
        # A flit's last write lands a cycle after it is made, before the link can read it
        # (the flit is full only after the cycle that finishes it).
        write_addr = Signal.like(write.addr)
        write_word = Signal(16)
        write_en = Signal(piece_bytes)
        m.d.comb += [write.addr.eq(write_addr),
                     write.data.eq(Cat(*[write_word] * (piece_bytes // 2))),
                     write.en.eq(write_en)]
        m.d.sync += write_en.eq(0)
        read = flits.read_port()          # registered: a row a cycle after its address
        full = Signal(2)                  # each slot holds a whole flit
        slot = Signal()                   # the slot being written
        out_slot = Signal()               # the slot the link reads
        headers = [Signal(32, name=f"header{n}") for n in range(2)]
        ends = [Signal(range(p.flit_bytes + 1), name=f"end{n}") for n in range(2)]
        position = Signal(range(p.flit_bytes + 2))      # the flit byte written next
        writing = Signal()
        writing_raw = Signal()
        finishing = Signal()
        word = encoder.o.payload
        row_of = slot * rows + position // piece_bytes

        def write_exponent():
            """A coded bf16 flit: its values words (64 bits, written 16 bits a cycle from
            the body's start), then its escape bytes from the byte after the values (the
            encoder sends them beside the values; a queue holds them meanwhile). The
            values' last word may write a byte of zeros past them, which the first
            escape then overwrites; the bytes past the escapes are not the flit's."""
            with m.If(escaping):
                with m.If(escape_queue.r_rdy):
                    m.d.comb += escape_queue.r_en.eq(1)
                    escape = escape_queue.r_data
                    with m.If(escape[8]):
                        m.d.sync += [write_addr.eq(row_of),
                                     write_word.eq(Cat(escape[:8], escape[:8])),
                                     write_en.eq(byte_enables(position, 1, piece_bytes)),
                                     position.eq(position + 1)]
                    with m.If(escape[9]):
                        m.d.sync += [escaping.eq(0), finishing.eq(1)]
            with m.Elif(encoder.o.valid):
                # The word's last piece: the one that reaches its bits.
                final_piece = Cat(Const(0, 4), piece + 1) >= word.bits
                m.d.sync += [write_addr.eq(row_of),
                             write_word.eq(word.data.word_select(~piece, 16)),
                             write_en.eq(byte_enables(position, 2, piece_bytes)),
                             position.eq(position + 2), piece.eq(piece + 1)]
                with m.If(final_piece):
                    m.d.comb += encoder.o.ready.eq(1)
                    m.d.sync += piece.eq(0)
                    with m.If(word.last):
                        # The escapes start at the byte after the values' last bit.
                        m.d.sync += [escaping.eq(1),
                                     position.eq(position - (piece << 1)
                                                 + ((word.bits + 7) >> 3))]

        if bf16:
            # The escapes word of each beat (a value a beat: one byte, or none) as a byte
            # with ``has`` and ``last``.
            m.submodules.escapes = escape_queue = SyncFIFOBuffered(
                width=10, depth=ESCAPE_QUEUE_DEPTH)
            escapes = encoder.o_escapes
            m.d.comb += [escape_queue.w_data.eq(Cat(escapes.payload.data[-8:],
                                                    escapes.payload.bits != 0,
                                                    escapes.payload.last)),
                         escape_queue.w_en.eq(escapes.valid),
                         escapes.ready.eq(escape_queue.w_rdy)]
            piece = Signal(2)             # the 16-bit piece of the values word written next
            escaping = Signal()           # the values are written; the escapes go next
        # Status flits (stream numbers): once a flit has been sent, a stream with no flit
        # to send for ``status_cycles`` cycles puts a status flit in a slot (a header
        # alone: raw, no symbol, not a frame's end; the link side numbers it as the
        # stream's next flit, and moves no number on), and again after each such span.
        statuses = Signal(2)              # each slot's flit is a status flit
        out_status = statuses.bit_select(out_slot, 1)
        status_due = Const(0, 1)
        if p.stream_numbers:
            quiet = Signal(range(p.status_cycles + 1))
            started = Signal()            # a flit has been sent since reset
            with m.If(self.flit_taken):
                m.d.sync += started.eq(1)
            with m.If(self.flit_taken | writing | body_modes.r_rdy | full.any()):
                m.d.sync += quiet.eq(0)
            with m.Elif(started & (quiet != p.status_cycles)):
                m.d.sync += quiet.eq(quiet + 1)
            # (``quiet`` clears a cycle after a slot fills: the slots must be empty now
            # too, or the cycle after a status flit would send a second.)
            status_due = started & (quiet == p.status_cycles) & ~full.any()
        with m.If(~writing):
            with m.If(body_modes.r_rdy & ~full.bit_select(slot, 1)):
                m.d.comb += body_modes.r_en.eq(1)
                m.d.sync += [writing.eq(1), writing_raw.eq(body_modes.r_data),
                             position.eq(HEADER_BYTES), finishing.eq(0)]
            with m.Elif(status_due):
                # (``quiet`` counts only while both slots are empty.)
                status = header_bits(codec=0, bank=enc_tag, last=0, stream=self._index,
                                 count=0, bits=0)
                for index in range(2):
                    with m.If(slot == index):
                        m.d.sync += [headers[index].eq(status), ends[index].eq(HEADER_BYTES)]
                m.d.sync += [full.bit_select(slot, 1).eq(1), statuses.bit_select(slot, 1).eq(1),
                             slot.eq(~slot)]
        with m.Elif(finishing):
            with m.If(infos.r_rdy):
                done = Signal(info_layout)
                m.d.comb += [done.eq(infos.r_data), infos.r_en.eq(1)]
                value = header_bits(codec=Mux(done.raw, 0, coded_id), bank=done.bank,
                                last=done.last, stream=self._index, count=done.count,
                                bits=done.bits)
                with m.If(slot):
                    m.d.sync += [headers[1].eq(value), ends[1].eq(position)]
                with m.Else():
                    m.d.sync += [headers[0].eq(value), ends[0].eq(position)]
                m.d.sync += [full.bit_select(slot, 1).eq(1), slot.eq(~slot),
                             statuses.bit_select(slot, 1).eq(0),
                             writing.eq(0), finishing.eq(0)]
        with m.Elif(writing_raw):
            m.d.comb += raw_ready.eq(1)
            with m.If(raw_valid):
                with m.If(head.has):
                    m.d.sync += [write_addr.eq(row_of),
                                 write_word.eq(Cat(*[head.symbol] * (16 // symbol_bits))),
                                 write_en.eq(byte_enables(position, symbol_bits // 8,
                                                           piece_bytes))]
                    m.d.sync += position.eq(position + symbol_bits // 8)
                with m.If(head.end):
                    m.d.sync += finishing.eq(1)
        with m.Else():
            if bf16:
                write_exponent()
            else:
                # The encoder pads its last word with zeros (BitPacker), so every byte
                # before ``position`` is the flit's.
                m.d.comb += encoder.o.ready.eq(1)
                with m.If(encoder.o.valid):
                    m.d.sync += [write_addr.eq(row_of), write_word.eq(word.data),
                                 write_en.eq(byte_enables(position, 2, piece_bytes))]
                    m.d.sync += position.eq(position + 2)
                    with m.If(word.last):
                        m.d.sync += finishing.eq(1)

        # -- the link side's view ---------------------------------------------------------
        out_header = Mux(out_slot, headers[1], headers[0])
        number = None
        if p.stream_numbers:
            # The flit the link reads next is this stream's next in order: its number is
            # the frame's on this stream and its place in it (golden stream_number).
            frame, place = Signal(4), Signal(4)
            number = Cat(place, frame)
            with m.If(self.flit_taken & ~out_status):     # (a status flit moves none on)
                with m.If(header_fields(out_header).last):
                    m.d.sync += [frame.eq(frame + 1), place.eq(0)]
                with m.Else():
                    m.d.sync += place.eq(place + 1)
        m.d.comb += [
            self.flit_valid.eq(full.bit_select(out_slot, 1)),
            read.addr.eq(out_slot * rows + self.row),
            self.row_data.eq(shaped_row(m, p, read_data=read.data, row=self.row,
                                         header=out_header,
                                         end=Mux(out_slot, ends[1], ends[0]),
                                         number=number)),
        ]
        with m.If(self.flit_taken):
            # (The slot the link frees is never the one being filled.)
            m.d.sync += [out_slot.eq(~out_slot), full.bit_select(out_slot, 1).eq(0)]

        # Chunks of each link bank closed and not yet sent (a chunk is a flit). With the
        # code lengths' memory (QLC, Huffman) a chunk closed is counted a cycle later,
        # from the info register (``info_write``), so the cut ends at a flip-flop;
        # meanwhile the register itself keeps the bank busy (16 QLC streams: 48.0 to 61.2
        # MHz). The bf16 cutter counts it at once: there the register bought nothing, and
        # cost LUTs and the 4-stream transmitter's placement (docs/link.md).
        for bank in range(2):
            pending = Signal(range(CHUNK_QUEUE_DEPTH + 8), name=f"pending{bank}")
            sent = self.flit_taken & (header_fields(out_header).bank == bank) & ~out_status
            if registered_info:
                counted = info_valid & (info_write.bank == bank)
                busy = (pending != 0) | counted
                # (A flit sent is counted a cycle late too: ``flit_taken`` comes from the
                # link side, placed apart, and into every stream's count it was the
                # 16-stream critical path; the bank stays busy a cycle longer.)
                late = Signal(name=f"sent{bank}")
                m.d.sync += late.eq(sent)
                sent = late
            else:
                counted = info_closed & (info.bank == bank)
                busy = pending != 0
            m.d.sync += pending.eq(pending + counted - sent)
            m.d.comb += self.busy[bank].eq(busy | (in_frame & (cut_tag == bank)))
        return m
