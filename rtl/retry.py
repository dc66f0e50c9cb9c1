"""Go-back-N retry for the link (``rtl/link/``): a retry buffer at the sender, a flit
check at the receiver and a return channel between them.

A link with retry has a sequence number in every flit (``LinkFormat(...,
sequence="link")``, ``golden/link.py``): the byte before the CRC field. :class:`RetryTx`
sits behind the flit maker: it numbers each flit as it takes it (the byte was 0; the CRC
of the flit's last half is mended by adding the byte's part, as the CRC is linear), keeps
it in a buffer of ``depth`` flits, and sends it. :class:`RetryRx` sits in front of the
flit reader: it takes a whole flit, and passes it on only if its CRC holds and its
number is the one it expects next; any other flit (spoilt, lost before it, or sent
again) it drops, and asks for the expected one again.

The return channel carries the receiver's state, :data:`ack_layout`, a value every
cycle (not a stream: a late or missed value is made good by a later one): ``next``,
the number of the flit it expects (every flit before it has been taken: an ack of all of
them), and ``naks``, a count that steps each time it drops a flit since it last took
one (a nak: once per loss, not once per dropped flit). The sender frees the flits
before ``next``, and on a new ``naks`` sends again from ``next`` (go back N). If no ack
comes for ``ack_latency`` cycles while flits are out, it sends again from the oldest
(a lost flit at the end of a burst, a lost nak, a stalled return channel).

Both ends start at sequence number 0 after reset, so they are reset together (as a link
is retrained); a sender reset alone would find its flits refused until the receiver is
reset too.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..golden.crc import CRC_MESSAGE_BYTES
from ..golden.link import FLIT_BYTES, SEQUENCE_BYTES
from . import crc
from .payload import word_layout

__all__ = ["ack_layout", "RetryTx", "RetryRx", "RETRY_DEPTHS", "check_ack_latency",
           "check_link_shape", "sequence_position"]

#: The receiver's state on the return channel: ``next`` (the sequence number it expects)
#: and ``naks`` (steps once for each loss it has seen).
ack_layout = data.StructLayout({"next": 8, "naks": 2})

#: Retry buffer depths (flits) a sender may have: a power of two to 128, half the
#: sequence numbers' modulus (256), so that an ack's ``next`` is never ambiguous.
RETRY_DEPTHS = (1, 2, 4, 8, 16, 32, 64, 128)


def check_ack_latency(ack_latency):
    """``ack_latency`` if it is a number of cycles a sender may wait: 1 to 65535."""
    if (not isinstance(ack_latency, int) or isinstance(ack_latency, bool)
            or not 1 <= ack_latency < 1 << 16):
        raise ValueError(f"ack_latency must be 1 to 65535 cycles, not {ack_latency!r}")
    return ack_latency


def _check_depth(depth):
    if depth not in RETRY_DEPTHS:
        raise ValueError(f"depth must be one of {', '.join(map(str, RETRY_DEPTHS))} flits, "
                         f"not {depth!r}")
    return depth


def check_link_shape(flit_bytes, link_bytes):
    """Refuse a flit size that is not one of :data:`~linkcodec.golden.link.FLIT_BYTES`, or
    a link word (``link_bytes``) that is not a power of two from 8 to ``flit_bytes``."""
    if flit_bytes not in FLIT_BYTES:
        raise ValueError(f"flit_bytes must be one of {', '.join(map(str, FLIT_BYTES))}, "
                         f"not {flit_bytes!r}")
    if (not isinstance(link_bytes, int) or isinstance(link_bytes, bool) or link_bytes < 8
            or link_bytes & (link_bytes - 1) or link_bytes > flit_bytes):
        raise ValueError(f"link_bytes must be a power of two from 8 to flit_bytes "
                         f"({flit_bytes}), not {link_bytes!r}")


def sequence_position(flit_bytes, link_bytes, crc_bytes):
    """``(bit, offset)``: the lowest bit of the sequence byte in a flit's last link word,
    and the byte's offset in the CRC message of the flit's last half."""
    offset = flit_bytes - crc_bytes - SEQUENCE_BYTES
    column = offset % link_bytes
    return 8 * (link_bytes - 1 - column), offset % CRC_MESSAGE_BYTES


class _RetryEnd(wiring.Component):
    def __init__(self, members, *, flit_bytes, link_bytes, crc_bytes):
        self._checked(check_link_shape, flit_bytes, link_bytes)
        self.flit_bytes, self.link_bytes, self.crc_bytes = flit_bytes, link_bytes, crc_bytes
        self.rows = flit_bytes // link_bytes
        self.row_bits = 8 * link_bytes
        super().__init__(members)

    def _checked(self, check, *args):
        """``check(*args)``; a component refused is not an unused one (Amaranth warns of
        those)."""
        try:
            return check(*args)
        except (TypeError, ValueError):
            self._MustUse__silence = True
            raise

    def _row_address(self, row, slot):
        return Cat(row, slot) if self.rows > 1 else slot


class RetryTx(_RetryEnd):
    """Numbers flits, keeps them until acked, and sends them again on a nak or a timeout.

    Parameters (keyword-only): ``flit_bytes``, ``link_bytes`` (the link word), ``crc_bytes``
    (the flit's CRC field), ``depth`` (flits the buffer holds, one of
    :data:`RETRY_DEPTHS`) and ``ack_latency`` (cycles without an ack, while flits are
    out, after which it sends again from the oldest: longer than the round trip, from a
    flit's last word out to its ack back, else flits go twice for nothing).

    Ports: ``i`` (link words of whole flits, sequence byte 0: ``LinkTx``'s flit maker),
    ``o`` (the numbered flits, as ``i``), ``i_ack`` (:data:`ack_layout`, the return
    channel, sampled every cycle).

    Throughput: a word a cycle in and out. Latency: a flit is sent once its last word is
    in the buffer; that word is written in the cycle it is taken and read the next
    (block RAM, whose read register is ``o``'s): out 2 cycles after it came, when idle
    (the flit's first word waits for its last). Backpressure on ``o`` holds the read
    register and the sending; ``i.ready`` falls while the buffer holds ``depth`` flits
    not yet acked (or a flit being sent again, acked meanwhile, still has its place),
    and depends on nothing else (not on ``i.payload`` or ``o.ready``). Bad input: an ack
    whose ``next`` is not of a flit sent and not yet acked is ignored. Reset empties the
    buffer and starts again at sequence number 0 (reset the receiver with it).
    """

    def __init__(self, *, flit_bytes, link_bytes, crc_bytes, depth, ack_latency):
        self.depth = self._checked(_check_depth, depth)
        self.ack_latency = self._checked(check_ack_latency, ack_latency)
        row_bits = 8 * link_bytes
        super().__init__({
            "i": In(stream.Signature(word_layout(row_bits))),
            "o": Out(stream.Signature(word_layout(row_bits))),
            "i_ack": In(ack_layout),
        }, flit_bytes=flit_bytes, link_bytes=link_bytes, crc_bytes=crc_bytes)

    def elaborate(self, platform):
        m = Module()
        rows, row_bits, depth = self.rows, self.row_bits, self.depth
        slot_bits = (depth - 1).bit_length()
        m.submodules.buffer = buffer = Memory(shape=row_bits, depth=depth * rows, init=[])
        write, read = buffer.write_port(), buffer.read_port()

        head = Signal(8)       # the number of the next flit taken
        base = Signal(8)       # the oldest flit not acked
        send = Signal(8)       # the next flit sent
        held = Signal(8)
        m.d.comb += held.eq(head - base)
        # ``send`` is behind ``base`` when acks came for flits sent before a rewind: the
        # flit it reads is acked, but its place must not be written until it is out.
        behind = Signal()
        room = Signal(8)
        m.d.comb += [behind.eq((send - base)[:8] > held),
                     room.eq(Mux(behind, head - send, held))]

        # In: each word into the buffer; the last word gets the sequence number and the
        # CRC of its half mended.
        row_in = Signal(range(rows))
        last_in = row_in == rows - 1
        bit, offset = sequence_position(self.flit_bytes, self.link_bytes, self.crc_bytes)
        patch = Signal(row_bits)
        m.d.comb += patch.eq((head << bit)
                             | crc.crc_field([crc.byte_contribution(head, offset)]))
        taken = self.i.valid & self.i.ready
        m.d.comb += [
            self.i.ready.eq(room < depth),
            write.addr.eq(self._row_address(row_in, head[:slot_bits])),
            write.data.eq(self.i.payload.data ^ Mux(last_in, patch, 0)),
            write.en.eq(taken),
        ]
        with m.If(taken):
            m.d.sync += row_in.eq(Mux(last_in, 0, row_in + 1))
            with m.If(last_in):
                m.d.sync += head.eq(head + 1)

        # Acks and naks from the return channel; the timeout.
        ack = self.i_ack
        step = Signal(8)
        m.d.comb += step.eq(ack.next - base)
        acked = (step != 0) & (step <= held)
        naks_seen = Signal(2)
        rewind = Signal()                       # send again from ``base`` (at a flit's start)
        timer = Signal(range(self.ack_latency + 1))
        row_out = Signal(range(rows))
        boundary = row_out == 0
        rewound = Signal()
        with m.If(acked):
            m.d.sync += base.eq(ack.next)
        m.d.sync += naks_seen.eq(ack.naks)
        with m.If(acked | rewound | (send == base)):
            m.d.sync += timer.eq(0)
        with m.Elif(timer == self.ack_latency):
            m.d.sync += [timer.eq(0), rewind.eq(1)]
        with m.Else():
            m.d.sync += timer.eq(timer + 1)
        with m.If(ack.naks != naks_seen):
            m.d.sync += rewind.eq(1)

        # Out: the buffer's read port is the output register. It reads the next word when
        # the word in it is taken (or there is none), and holds it otherwise.
        valid, last = Signal(), Signal()
        advance = ~valid | self.o.ready
        issue = Signal()
        with m.If(boundary & (rewind | behind)):
            m.d.comb += rewound.eq(1)
            m.d.sync += [send.eq(Mux(acked, ack.next, base)), rewind.eq(0)]
        with m.Elif((send != head) & advance):
            m.d.comb += issue.eq(1)
            m.d.sync += row_out.eq(Mux(row_out == rows - 1, 0, row_out + 1))
            with m.If(row_out == rows - 1):
                m.d.sync += send.eq(send + 1)
        m.d.comb += [read.addr.eq(self._row_address(row_out, send[:slot_bits])),
                     read.en.eq(advance)]
        with m.If(advance):
            m.d.sync += [valid.eq(issue), last.eq(row_out == rows - 1)]
        m.d.comb += [self.o.valid.eq(valid), self.o.payload.data.eq(read.data),
                     self.o.payload.last.eq(last), self.o.payload.bits.eq(row_bits)]
        return m


class RetryRx(_RetryEnd):
    """Passes on whole flits whose CRC holds and whose sequence number is the next; drops
    the others, and says which it expects on the return channel.

    Parameters (keyword-only): ``flit_bytes``, ``link_bytes``, ``crc_bytes``, as
    :class:`RetryTx`'s. Ports: ``i`` (link words from the channel, whole flits),
    ``o`` (the flits taken, as ``i``: ``LinkRx``'s flit reader), ``o_ack``
    (:data:`ack_layout`, a register).

    Throughput: a word a cycle. Latency: a flit is passed on once its last word is in and
    checked: its first word leaves ``flit_bytes / link_bytes`` cycles after it came, its
    last word one cycle after it came (the buffer holds two flits, so the next comes in
    while one goes out). ``o_ack`` changes the cycle after a flit's last word. Backpressure on ``o`` fills both flits, then
    ``i.ready`` falls; ``i.ready`` depends on neither ``i.payload`` nor ``o.ready``.
    Bad input: a flit whose CRC fails or whose sequence number is not the next is
    dropped (never a word of it passes) and a nak raised, once until a flit is taken
    again. Reset drops the flits in hand and expects sequence number 0.
    """

    def __init__(self, *, flit_bytes, link_bytes, crc_bytes):
        row_bits = 8 * link_bytes
        super().__init__({
            "i": In(stream.Signature(word_layout(row_bits))),
            "o": Out(stream.Signature(word_layout(row_bits))),
            "o_ack": Out(ack_layout),
        }, flit_bytes=flit_bytes, link_bytes=link_bytes, crc_bytes=crc_bytes)

    def elaborate(self, platform):
        m = Module()
        rows, row_bits = self.rows, self.row_bits
        m.submodules.buffer = buffer = Memory(shape=row_bits, depth=2 * rows, init=[])
        write, read = buffer.write_port(), buffer.read_port(domain="comb")

        fill, drain = Signal(), Signal()        # the slot written, the slot read
        full = Signal(2)
        row_in, row_out = Signal(range(rows)), Signal(range(rows))
        expected = Signal(8)
        naks = Signal(2)
        naked = Signal()                        # a nak raised since the last flit taken
        m.d.comb += [self.o_ack.next.eq(expected), self.o_ack.naks.eq(naks)]

        data_in = self.i.payload.data
        last_in = row_in == rows - 1
        taken = self.i.valid & self.i.ready
        m.d.comb += [self.i.ready.eq(~full.bit_select(fill, 1)),
                     write.addr.eq(self._row_address(row_in, fill)),
                     write.data.eq(data_in), write.en.eq(taken)]
        parts, _ = crc.word_parts(m, data_in, last_in, flit_bytes=self.flit_bytes,
                                  link_bytes=self.link_bytes, crc_bytes=self.crc_bytes)
        crc_good = crc.flit_good(m, flit_bytes=self.flit_bytes, link_bytes=self.link_bytes,
                                 crc_bytes=self.crc_bytes, parts=parts, valid=taken,
                                 row=row_in, data=data_in)
        bit, _ = sequence_position(self.flit_bytes, self.link_bytes, self.crc_bytes)
        good = crc_good & (data_in[bit:bit + 8] == expected)
        filled = Signal()
        with m.If(taken):
            m.d.sync += row_in.eq(Mux(last_in, 0, row_in + 1))
            with m.If(last_in):
                with m.If(good):
                    m.d.comb += filled.eq(1)
                    m.d.sync += [fill.eq(~fill), expected.eq(expected + 1), naked.eq(0)]
                with m.Elif(~naked):
                    m.d.sync += [naks.eq(naks + 1), naked.eq(1)]

        last_out = row_out == rows - 1
        sent = self.o.valid & self.o.ready
        emptied = Signal()
        m.d.comb += [
            self.o.valid.eq(full.bit_select(drain, 1)),
            read.addr.eq(self._row_address(row_out, drain)),
            self.o.payload.data.eq(read.data), self.o.payload.bits.eq(row_bits),
            self.o.payload.last.eq(last_out),
        ]
        with m.If(sent):
            m.d.sync += row_out.eq(Mux(last_out, 0, row_out + 1))
            with m.If(last_out):
                m.d.comb += emptied.eq(1)
                m.d.sync += drain.eq(~drain)
        set_mask = Mux(filled, Mux(fill, 0b10, 0b01), 0)
        clear_mask = Mux(emptied, Mux(drain, 0b10, 0b01), 0)
        m.d.sync += full.eq((full | set_mask) & ~clear_mask)
        return m
