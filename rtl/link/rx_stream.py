"""One stream of :class:`~linkcodec.rtl.link.LinkRx`: its two-flit buffer, its
reader (raw flits a symbol a cycle, coded ones into the decoder a word a cycle) and its
decoder."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ...golden.link import HEADER_BYTES, STREAM_AHEAD
from .. import exponent
from ..bitpack import RegisterSlice
from ..payload import symbol_layout
from ..table import config_listener
from .common import byte_of_row, byte_of_word, header_fields, word_of_row


class RxStream(wiring.Component):
    """One stream of :class:`LinkRx`: a flit buffer of two flits, the raw reader, the
    decoder and the output that takes both in flit order."""

    def __init__(self, params):
        self._params = params
        super().__init__({
            "o": Out(stream.Signature(symbol_layout(1, width=params.symbol_bits,
                                                    error=True))),
            "slot_freed": Out(1),          # a cycle after a flit slot empties
            "write": In(1),                # a row of the routed flit
            "write_row": In(range(params.rows)),
            "write_data": In(params.row_bits),
            "write_good": In(1),           # with the last row: the flit's CRC is right
            # Tables in band (see LinkRx): which banks hold a whole table, each change of
            # which bank is being loaded (bit b: bank b, a cycle late), the loader's writes
            # to the decoder's idle bank (taken when ``table_ready``), and whether this
            # stream has seen the load and is off the bank being loaded (``clear``), as it
            # must be before the writes start.
            "bank_valid": In(2),
            "load_change": In(2),
            "clear": Out(1),
            "table": In(config_listener(params.hardware.decoder_config_layout)),
            "table_ready": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        p = self._params
        rows, link_bytes = p.rows, p.link_bytes
        m.submodules.flits = flits = Memory(shape=unsigned(p.row_bits), depth=2 * rows,
                                            init=[])
        write = flits.write_port()
        # Read without a register: only the 16-bit word a read wants is registered (a
        # 512-bit registered read made the read enable a fan-out of a row's bits: it was
        # the 16-stream receiver's critical path).
        read = flits.read_port(domain="comb")
        full = Signal(2)
        spoilt = Signal(2)                  # a slot's flit failed its CRC
        slot = Signal()                     # the slot being written
        out_slot = Signal()                 # the slot being read
        headers = [Signal(32, name=f"header{n}") for n in range(2)]
        m.d.comb += [
            write.addr.eq(slot * rows + self.write_row),
            write.data.eq(self.write_data),
            write.en.eq(self.write),
        ]
        top = self.write_data[-32:]
        with m.If(self.write & (self.write_row == 0)):
            with m.If(slot):
                m.d.sync += headers[1].eq(top)
            with m.Else():
                m.d.sync += headers[0].eq(top)
        last_row = self.write & (self.write_row == rows - 1)
        with m.If(last_row):
            m.d.sync += slot.eq(~slot)
        # The header of the flit being written, at its last row (a one-row flit's is in
        # this very write), and whether it claims more than its flit holds (golden
        # FlitReader: ``bits``): a raw flit whose count is past the body or whose bits are
        # not its count's, or a QLC or Huffman flit whose bits are past the body (a bf16
        # one is judged as it is read). Such a flit, a sender's fault with a good CRC,
        # gives the error beat as a refused flit does, judged here so that nothing is
        # added to the decision that starts a flit.
        written = top if rows == 1 else Mux(slot, headers[1], headers[0])
        w_fields = header_fields(written)
        w_raw, w_count, w_bits = w_fields.codec == 0, w_fields.count, w_fields.bits
        unfit = Signal()
        m.d.comb += unfit.eq(Mux(w_raw,
                                 (w_count > p.fmt.raw_symbols)
                                 | (w_bits != w_count * (8 * p.fmt.symbol_bytes)),
                                 (w_bits > p.fmt.body_bits) if not p.hardware.two_streams
                                 else 0))

        numbered = p.stream_numbers
        if numbered:
            skips, ends, holes, refuses = self._judge_numbers(
                m, w_fields=w_fields, w_raw=w_raw, w_count=w_count, last_row=last_row,
                slot=slot, unfit=unfit)

        header = Signal(32)
        m.d.comb += header.eq(Mux(out_slot, headers[1], headers[0]))
        fields = header_fields(header)
        is_raw = fields.codec == 0
        h_last, h_count, h_bits = fields.last, fields.count, fields.bits

        bf16 = p.hardware.two_streams
        symbol_bytes = p.fmt.symbol_bytes
        m.submodules.decoder = decoder = p.hardware.block("decoder", p.tables)
        # The coded flits in the decoder: their last flag and count, oldest first.
        m.submodules.decoding = decoding = SyncFIFOBuffered(width=13, depth=4)
        outstanding = Signal(range(6))

        reading = Signal()
        # The flit byte of the next read, and the reads left (raw: symbols; coded:
        # words), both set as the flit starts: no path from the header's fields to the
        # done decision, which ends the flit (a compare behind the header's subtracts
        # was the 16-stream receiver's critical path).
        word_byte = Signal(13)
        left = Signal(12)
        raw_out_valid = Signal()
        raw_out = Signal(symbol_layout(1, width=p.symbol_bits, error=True))
        freed = Signal()

        # One 16-bit word a cycle, read into ``word`` (a register) a cycle before its use:
        # the decoder's next word, or the pair of bytes that holds the next raw symbol
        # (raw symbol n is flit byte 4 + n; the body starts on an even byte). The word in
        # hand keeps what it needs of its flit's header, so the slot can go at once.
        column_bits = (link_bytes - 1).bit_length()
        read_byte = Signal.like(word_byte)        # the flit byte read
        # The read's slot is a flip-flop of its own, beside the buffer: ``out_slot`` goes
        # to much of the stream, and its route to the read address was the start of the
        # 16-stream receiver's critical path (to ``word`` through the read). (It is
        # ``out_slot`` in every cycle, but made as ``out_slot ^ freed`` rather than as a
        # copy, which synthesis would merge back into ``out_slot``.)
        read_slot = Signal()
        m.d.sync += read_slot.eq(out_slot ^ freed)
        # (The address is the slot and the row's bits alone, no carry: a flit whose
        # header claims more than its body is refused unread (the module's docstring) but
        # a bf16 one, judged as it is read; a read past the flit's end reads its own
        # slot's first rows.)
        row_bits = (rows - 1).bit_length()
        m.d.comb += [read_byte.eq(word_byte),
                     read.addr.eq(Cat(read_byte[column_bits:][:row_bits], read_slot))]
        words = Mux(h_bits == 0, 1, (h_bits + 15) >> 4)
        # A coded flit's last word's bits: the bits past the last whole 16, or 16.
        tail_bits = Mux(h_bits[:4] == 0, Mux(h_bits == 0, 0, 16), h_bits[:4])
        held = Signal()                          # a word in hand
        held_raw = Signal()
        held_empty = Signal()                    # an empty raw flit: no symbol
        held_error = Signal()                    # ... or a refused one: its error beat
        held_done = Signal()                     # its flit's last symbol or word
        held_last = Signal()                     # ... of a flit that ends a frame
        held_bits = Signal(5)                    # a coded flit's last word's bits
        held_select = Signal(column_bits)        # the byte it starts at, in the row
        word = Signal(16)                        # the word read, from ``read_byte``
        byte = Signal(8)
        m.d.comb += byte.eq(byte_of_word(word, held_select))

        with m.If(raw_out_valid & self.o.ready):
            m.d.sync += raw_out_valid.eq(0)
        used = Signal()
        with m.If(held & held_raw):
            with m.If(~raw_out_valid | self.o.ready):
                m.d.comb += used.eq(1)
                with m.If(held_empty):
                    # An empty flit: only a frame's end, if it is one; or a refused
                    # flit's error beat.
                    # (With stream numbers an error beat ends a frame only where the
                    # flit does: it stands for the flit's symbols.)
                    m.d.sync += [raw_out.symbols[0].eq(0), raw_out.count.eq(0),
                                 raw_out.last.eq(held_last if numbered else 1),
                                 raw_out.error.eq(held_error),
                                 raw_out_valid.eq(held_last | held_error)]
                with m.Else():
                    m.d.sync += [raw_out.symbols[0].eq(word if bf16 else byte),
                                 raw_out.count.eq(1),
                                 raw_out.last.eq(held_done & held_last),
                                 raw_out.error.eq(0), raw_out_valid.eq(1)]
        if not bf16:
            with m.Elif(held):
                m.d.comb += [
                    decoder.i.valid.eq(1),
                    decoder.i.payload.data.eq(word),
                    decoder.i.payload.bits.eq(Mux(held_done, held_bits, 16)),
                    decoder.i.payload.last.eq(held_done),
                    used.eq(decoder.i.ready),
                ]
        advance = ~held | used
        if bf16:
            coded_reading, coded_start, malformed, settled = self._read_exponent(
                m, decoder, h_count=h_count, h_bits=h_bits, word=word, byte=byte,
                select=held_select, read_byte=read_byte, freed=freed,
                changed=freed | (self.write & (self.write_row == 0)))
            read_en = advance | coded_reading
        else:
            coded_reading = coded_start = Const(0, 1)
            malformed, settled = Const(0, 1), Const(1, 1)
            read_en = advance
        with m.If(read_en):
            m.d.sync += word.eq(word_of_row(read.data, read_byte[:column_bits]))
        with m.If(advance):
            m.d.sync += held.eq(0)

        # Banks: a coded flit names the bank it was coded with. If that is not the
        # decoder's, the decoder is switched to it first (at its next frame boundary,
        # which this flit's first word is); a bank that holds no whole table gives the
        # flit's error beat instead of its symbols (a bank being loaded is waited for).
        # While a table loads into a bank this stream's decoder works on, the stream is
        # switched off it as soon as its flit slots are empty (``clear``).
        h_bank = fields.bank
        active = Signal(reset_less=True)       # the decoder's bank, as switched: a table
        switching = Signal()                   # a switch write offered to the decoder
        refusing = Signal()                    # the flit being read gives an error beat
        skipping = Signal() if numbered else Const(0, 1)   # ... or nothing (numbers)
        # Without tables in band both banks hold the elaboration tables, so the decoder
        # stays on its own (no switch, no config write: its tables fold into constants).
        bank_ok = (self.bank_valid.bit_select(h_bank, 1) if p.tables_in_band
                   else Const(1, 1))
        # Which bank is being loaded (bit b: bank b), a cycle late: LinkRx sends each
        # change of it (``load_change``, from its registers), and the stream keeps the
        # sum here, beside it (the route of LinkRx's ``loading`` into every stream's start
        # decision was the 16-stream receiver's critical path). (Kept as a sum, each
        # stream's register differs from the others', so synthesis does not merge the 16
        # back into one, as it would 16 copies.) A stream so learns of a load a cycle
        # late, and may start a switch to the bank in that cycle; so it says it is
        # ``clear`` only from the cycle it has seen the load, and from then on starts no
        # such switch.
        load_seen = Signal(2)
        m.d.sync += load_seen.eq(load_seen ^ self.load_change)
        blocked = load_seen.bit_select(h_bank, 1)
        if numbered:
            # The error beats owed before the next flit's symbols.
            owed_ends = Mux(out_slot, ends[1], ends[0])
            owed_hole = holes.bit_select(out_slot, 1)
            owed = full.bit_select(out_slot, 1) & ((owed_ends != 0) | owed_hole)
            with m.If(~reading & owed):
                # (In order: after every beat of the flits before, with nothing in hand.)
                with m.If((outstanding == 0) & ~held & (~raw_out_valid | self.o.ready)):
                    m.d.sync += [raw_out.symbols[0].eq(0), raw_out.count.eq(0),
                                 raw_out.last.eq(owed_ends != 0), raw_out.error.eq(1),
                                 raw_out_valid.eq(1)]
                    with m.If(owed_ends != 0):
                        for index, register in enumerate(ends):
                            with m.If(out_slot == index):
                                m.d.sync += register.eq(register - 1)
                    with m.Else():
                        m.d.sync += holes.bit_select(out_slot, 1).eq(0)
            starting = m.Elif(~reading)
        else:
            starting = m.If(~reading)
        # A switch written to a QLC or Huffman decoder takes effect after every frame
        # whose words went in before it, even those still waiting in its queue. The
        # exponent decoder's takes effect at its escapes stage (rtl/exponent.py, "Banks"),
        # so by its docs a coded flit short enough to wait whole before that stage would
        # be decoded with the new bank: a bf16 stream switches its decoder only once it
        # holds no word. (LinkTx codes a chunk only past a raw flit's symbols, so its
        # flits never are that short; no test shows the case.)
        drained = (outstanding == 0) if bf16 else Const(1, 1)
        with starting:
            # (A flit that failed its CRC gives the error beat, whatever its header says;
            # with stream numbers it is skipped, as a repeated flit is.)
            bad = (skips if numbered else spoilt).bit_select(out_slot, 1)
            # (With stream numbers a flit that claims more than it holds is taken, its
            # number counted, and refused: the error beat that stands for its symbols.)
            unfit_out = refuses.bit_select(out_slot, 1) if numbered else Const(0, 1)
            with m.If(full.bit_select(out_slot, 1) & ~switching & (is_raw | settled)):
                with m.If(is_raw | bad | unfit_out | (~bank_ok & ~blocked) | malformed):
                    with m.If(outstanding == 0):
                        m.d.sync += [reading.eq(1), word_byte.eq(HEADER_BYTES),
                                     left.eq(Mux(is_raw & ~bad & ~unfit_out, h_count, 0)),
                                     refusing.eq((~is_raw | unfit_out) & ~bad if numbered
                                                 else ~is_raw | bad)]
                        if numbered:
                            m.d.sync += skipping.eq(bad)
                if p.tables_in_band:
                    with m.Elif(h_bank != active):
                        with m.If(~blocked & drained):
                            m.d.sync += switching.eq(1)
                # (bf16: not while a raw flit's last value is in hand, as the coded
                # flit's reads move the read port and the byte select under it.)
                with m.Elif(decoding.w_rdy & (~held if bf16 else 1)):
                    m.d.comb += [decoding.w_en.eq(1),
                                 decoding.w_data.eq(Cat(h_count, h_last))]
                    if bf16:
                        m.d.comb += coded_start.eq(1)
                        m.d.sync += reading.eq(1)
                    else:
                        m.d.sync += [reading.eq(1), word_byte.eq(HEADER_BYTES),
                                     left.eq(words), refusing.eq(0)]
            if p.tables_in_band:
                with m.Elif(load_seen.bit_select(active, 1) & ~full.any()
                            & ~switching & drained):
                    m.d.sync += switching.eq(1)
        with m.Elif(advance & ~coded_reading):
            # (An empty raw flit starts with none left: it is done at once.)
            done = left <= 1
            flat = (is_raw | refusing | skipping) if numbered else (is_raw | refusing)
            m.d.sync += [held.eq(1), held_raw.eq(flat), held_empty.eq(flat & (left == 0)),
                         held_error.eq(refusing),
                         held_done.eq(done),
                         held_last.eq(h_last & ~skipping if numbered else h_last),
                         held_bits.eq(tail_bits),
                         held_select.eq(word_byte[:column_bits]),
                         word_byte.eq(word_byte + Mux(is_raw, symbol_bytes, 2)),
                         left.eq(left - 1)]
            m.d.comb += freed.eq(done)
        m.d.sync += self.slot_freed.eq(freed)
        with m.If(freed):
            m.d.sync += [reading.eq(0), out_slot.eq(~out_slot),
                         full.bit_select(out_slot, 1).eq(0)]
            if numbered:
                m.d.sync += skipping.eq(0)
        with m.If(last_row):
            # (Without stream numbers a flit that claims more than it holds is refused
            # as one that fails its CRC is: the error beat alone.)
            m.d.sync += [full.bit_select(slot, 1).eq(1),
                         spoilt.bit_select(slot, 1).eq(
                             ~self.write_good | (0 if numbered else unfit))]

        config = decoder.i_config
        if p.tables_in_band:          # (else nothing writes the decoder's config)
            # The loader's write passes a register here, so the broadcast to every stream
            # ends at a flip-flop: the decoder takes it a cycle later, and is ready then
            # (LinkRx offers writes only once every stream is clear and ready, and from
            # then until the load ends a decoder's ``ready`` only rises: no stream can
            # start a switch while the bank it would need is being loaded).
            # The registers take a write only while this stream is clear, as it always is
            # while writes are offered: so their 16 copies differ, and synthesis no longer
            # merges them into one that drives every decoder across the die (at seed 1
            # that merged register was the 16-stream receiver's critical path).
            table_write = Signal.like(self.table.payload)
            table_valid = Signal()
            m.d.sync += table_valid.eq(self.table.valid & self.clear)
            with m.If(self.clear):
                m.d.sync += table_write.eq(self.table.payload)
            with m.If(switching):
                m.d.comb += [config.valid.eq(1),
                             config.payload.addr.eq(p.hardware.decoder_switch)]
                with m.If(config.ready):
                    m.d.sync += [switching.eq(0), active.eq(~active)]
            with m.Else():
                m.d.comb += [config.valid.eq(table_valid), config.payload.eq(table_write)]
            m.d.comb += [self.table_ready.eq(~switching & config.ready),
                         self.clear.eq(load_seen.bit_select(~active, 1) & ~switching)]

        # The output: raw symbols first (a raw flit starts only with no coded flit in
        # the decoder), else the decoder's, with last and error from the flit.
        # The decoder's beats pass a register slice first, so the output's ``ready`` and
        # the raw/decoded select stop there and do not reach the decoder's pipeline (they
        # were the 16-stream receiver's critical path): a cycle more for coded flits.
        m.submodules.decoded = decoded = RegisterSlice(decoder.o.payload.shape())
        wiring.connect(m, decoder.o, decoded.i)
        flit = Signal(13)
        m.d.comb += flit.eq(decoding.r_data)
        f_count, f_last = flit[:12], flit[12]
        seen = Signal(12)                       # symbols of the decoder's flit so far
        dec = decoded.o.payload
        total = seen + dec.count
        error = dec.error | (dec.last & (total != f_count))
        with m.If(raw_out_valid):
            m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(raw_out)]
        with m.Else():
            if bf16:
                # The decoder's beats of up to 4 values go out a value a beat; a beat with an
                # error gives its values, then the error beat (count 0), as a 1-lane decoder
                # does.
                lane = Signal(3)
                has_value = lane < dec.count
                final = Mux(has_value, (lane + 1 == dec.count) & ~error, 1)
                show = has_value | error | (dec.last & f_last)
                m.d.comb += [
                    self.o.valid.eq(decoded.o.valid & show),
                    self.o.payload.symbols[0].eq(dec.symbols[lane]),
                    self.o.payload.count.eq(has_value),
                    self.o.payload.error.eq(~has_value & error),
                    self.o.payload.last.eq(final & dec.last
                                           & (f_last if numbered else f_last | error)),
                    decoded.o.ready.eq(final & (self.o.ready | ~show)),
                ]
                with m.If(decoded.o.valid & (self.o.ready | ~show)):
                    m.d.sync += lane.eq(Mux(final, 0, lane + 1))
            else:
                m.d.comb += [
                    self.o.valid.eq(decoded.o.valid),
                    self.o.payload.symbols.eq(dec.symbols),
                    self.o.payload.count.eq(dec.count),
                    self.o.payload.error.eq(error),
                    self.o.payload.last.eq(dec.last & (f_last if numbered else f_last | error)),
                    decoded.o.ready.eq(self.o.ready),
                ]
        pushed = decoding.w_en & decoding.w_rdy
        beat_taken = decoded.o.valid & decoded.o.ready
        popped = beat_taken & dec.last
        with m.If(beat_taken):
            m.d.sync += seen.eq(Mux(dec.last, 0, total))
        m.d.comb += decoding.r_en.eq(popped)
        m.d.sync += outstanding.eq(outstanding + pushed - popped)
        return m

    def _judge_numbers(self, m, *, w_fields, w_raw, w_count, last_row, slot, unfit):
        """Stream numbers (golden StreamCheck): each flit is judged as its last row is
        written (``last_row``, into ``slot``; ``w_fields``, its header's fields, ``w_raw``
        and ``w_count`` two of them), in this
        stream's flit order. A flit that fails its CRC, or whose number is behind the one
        expected (a repeat), is skipped: nothing of it goes out. Else it first gives
        ``ends`` error beats that end a frame (frame ends lost) and, with ``hole``, one
        error beat inside its frame (flits lost before it in its frame); then its
        symbols. Returns, a bit or a register a slot: ``(skips, ends, holes,
        refuses)``, the last whether the flit claims more than it holds (``unfit``)."""
        p = self._params
        rows, link_bytes = p.rows, p.link_bytes
        skips = Signal(2)
        ends = [Signal(4, name=f"ends{n}") for n in range(2)]
        holes = Signal(2)
        want_frame, want_place = Signal(4), Signal(4)
        number = byte_of_row(self.write_data,
                             p.fmt.sequence_offset - (rows - 1) * link_bytes, link_bytes)
        got_place, got_frame = number[:4], number[4:]
        frames = Signal(4)
        places = Signal(4)
        m.d.comb += [frames.eq(got_frame - want_frame), places.eq(got_place - want_place)]
        behind = (frames > STREAM_AHEAD) | ((frames == 0) & (places > STREAM_AHEAD))
        skip = ~self.write_good | behind
        refuses = Signal(2)             # a slot's flit claims more than it holds
        with m.If(last_row):
            m.d.sync += [skips.bit_select(slot, 1).eq(skip),
                         refuses.bit_select(slot, 1).eq(unfit),
                         holes.bit_select(slot, 1).eq(
                             ~skip & Mux(frames != 0, got_place != 0, places != 0))]
            for index, register in enumerate(ends):
                with m.If(slot == index):
                    m.d.sync += register.eq(Mux(skip, 0, frames))
            with m.If(~skip):
                with m.If(w_fields.last):
                    m.d.sync += [want_frame.eq(got_frame + 1), want_place.eq(0)]
                with m.Elif(w_raw & (w_count == 0)):
                    # A status flit (no symbol, not a frame's end) is numbered as
                    # the flit after it: the expectation moves to it, not past it.
                    m.d.sync += [want_frame.eq(got_frame), want_place.eq(got_place)]
                with m.Else():
                    m.d.sync += [want_frame.eq(got_frame), want_place.eq(got_place + 1)]
        return skips, ends, holes, refuses

    def _read_exponent(self, m, decoder, *, h_count, h_bits, word, byte, select, read_byte,
                       freed, changed):
        """A coded bf16 flit into the exponent decoder: its values (the body's first
        ``ceil(11 count / 8)`` bytes) read 16 bits a cycle and gathered into the
        decoder's 64-bit words, its escape bytes (the rest of its bits) a byte a word.
        Each read goes into a queue of its kind with room for it, one kind or the other
        a cycle (in turn while both have room), so neither of the decoder's ports waits
        on the other's. The header's sizes (its values' bits, 11 a value) are registers,
        derived in the two cycles after the header comes in view (``changed``: the slot
        read or a header written changes). Returns ``(reading, start, malformed,
        settled)``: a flit is being read; start one (its header in view, set here); its header cannot be a
        coded flit's (its bits not whole bytes, more than the body or fewer than its
        values take: it gives the error beat); those sizes are the header's in view."""
        p = self._params
        column_bits = (p.link_bytes - 1).bit_length()
        reading = Signal()
        start = Signal()
        # Two stages: 11 x count (shifts and adds: a multiplier block is slower) and the
        # header's bits; then the sizes from those registers.
        early = Signal()
        settled = Signal()
        products = Signal(16)
        body_bytes = Signal(9)
        bits_sound = Signal()
        value_bits = Signal(16)           # of the header in view, two cycles late
        split = Signal(13)                # the values' bytes
        escape_count = Signal(12)         # the escape bytes
        malformed = Signal()
        m.d.sync += [early.eq(~changed), settled.eq(early & ~changed),
                     products.eq((h_count << 3) + (h_count << 1) + h_count),
                     body_bytes.eq(h_bits >> 3),
                     bits_sound.eq((h_bits[:3] == 0) & (h_bits <= p.fmt.body_bits))]
        rounded = (products + 7) >> 3
        m.d.sync += [value_bits.eq(products), split.eq(rounded),
                     escape_count.eq(body_bytes - rounded),
                     malformed.eq(~bits_sound | (body_bytes < rounded))]
        value_byte = Signal(13)           # the flit byte of the next values read
        values_left = Signal(12)          # 16-bit reads of values left
        escape_byte = Signal(13)
        escapes_left = Signal(12)         # escape bytes left
        empty_escapes = Signal()          # an empty escapes frame is still to send
        tail = Signal(7)                  # the bits of the values' last word

        # What the read of the cycle before brought: a values piece (its last?), or an
        # escape byte (``has``: else the empty escapes frame; its last?).
        got_value, got_value_last, got_escape, got_has, got_escape_last = (
            Signal(name=name) for name in ("got_value", "got_value_last", "got_escape",
                                           "got_has", "got_escape_last"))
        got_tail = Signal(7)
        m.submodules.value_pieces = pieces = SyncFIFO(width=16 + 1 + 7, depth=4)
        m.submodules.escape_bytes = escapes = SyncFIFO(width=8 + 2, depth=4)
        m.d.comb += [pieces.w_en.eq(got_value),
                     pieces.w_data.eq(Cat(word, got_value_last, got_tail)),
                     escapes.w_en.eq(got_escape),
                     escapes.w_data.eq(Cat(byte, got_has, got_escape_last))]
        m.d.sync += [got_value.eq(0), got_escape.eq(0)]

        with m.If(start):
            total = value_bits[:12]
            m.d.sync += [reading.eq(1),
                         value_byte.eq(HEADER_BYTES), values_left.eq((value_bits + 15) >> 4),
                         escape_byte.eq(HEADER_BYTES + split),
                         escapes_left.eq(escape_count),
                         empty_escapes.eq(escape_count == 0),
                         tail.eq(Mux(total[:6] == 0, 64, total[:6]))]
        may_value = (values_left != 0) & (pieces.level + got_value < pieces.depth)
        may_escape = (((escapes_left != 0) | empty_escapes)
                      & (escapes.level + got_escape < escapes.depth))
        turn = Signal()                   # both may: the escapes' turn
        take_escape = may_escape & (~may_value | turn)
        with m.If(reading):
            with m.If(may_value & may_escape):
                m.d.sync += turn.eq(~turn)
            with m.If(take_escape):
                m.d.comb += read_byte.eq(escape_byte)
                m.d.sync += [got_escape.eq(1), got_has.eq(escapes_left != 0),
                             got_escape_last.eq(escapes_left <= 1),
                             select.eq(escape_byte[:column_bits]),
                             escape_byte.eq(escape_byte + 1), empty_escapes.eq(0)]
                with m.If(escapes_left != 0):
                    m.d.sync += escapes_left.eq(escapes_left - 1)
            with m.Elif(may_value):
                m.d.comb += read_byte.eq(value_byte)
                m.d.sync += [got_value.eq(1), got_value_last.eq(values_left == 1),
                             got_tail.eq(tail),
                             select.eq(value_byte[:column_bits]),
                             value_byte.eq(value_byte + 2), values_left.eq(values_left - 1)]
            with m.Elif((values_left == 0) & (escapes_left == 0) & ~empty_escapes):
                # Every read is made (the last one's data is in hand): the slot can go.
                m.d.sync += reading.eq(0)
                m.d.comb += freed.eq(1)

        # The values pieces gathered into 64-bit words, the first piece in the top bits,
        # the pieces past a frame's last zero.
        gathered = Signal(48)             # the word's pieces so far
        index = Signal(2)                 # the next piece's place
        piece = pieces.r_data
        piece_data, piece_last, piece_tail = piece[:16], piece[16], piece[17:]
        completes = (index == 3) | piece_last
        word_register = Signal(decoder.i.payload.shape())
        word_valid = Signal()
        with m.If(decoder.i.ready):
            m.d.sync += word_valid.eq(0)
        m.d.comb += [decoder.i.valid.eq(word_valid), decoder.i.payload.eq(word_register)]
        with m.If(pieces.r_rdy & (~completes | ~word_valid | decoder.i.ready)):
            m.d.comb += pieces.r_en.eq(1)
            m.d.sync += index.eq(index + 1)
            for place in range(3):
                with m.If(index == place):
                    m.d.sync += gathered.word_select(2 - place, 16).eq(piece_data)
            with m.If(completes):
                places = [Mux(index > place, gathered.word_select(2 - place, 16),
                              Mux(index == place, piece_data, 0)) for place in range(3)]
                places.append(Mux(index == 3, piece_data, 0))
                m.d.sync += [word_valid.eq(1), index.eq(0),
                             word_register.data.eq(Cat(*reversed(places))),
                             word_register.bits.eq(Mux(piece_last, piece_tail, 64)),
                             word_register.last.eq(piece_last)]

        # The escape bytes, a word each (the byte in the top bits), or the empty frame.
        escape = escapes.r_data
        m.d.comb += [decoder.i_escapes.valid.eq(escapes.r_rdy),
                     decoder.i_escapes.payload.data.eq(
                         escape[:8] << (exponent.LINK_WORD_WIDTH - 8)),
                     decoder.i_escapes.payload.bits.eq(Mux(escape[8], 8, 0)),
                     decoder.i_escapes.payload.last.eq(escape[9]),
                     escapes.r_en.eq(decoder.i_escapes.ready)]
        return reading, start, malformed, settled
