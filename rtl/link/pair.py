""":class:`LinkPair`: a :class:`~linkcodec.rtl.link.LinkTx` driving a
:class:`~linkcodec.rtl.link.LinkRx` directly, and the helpers that build and join such
pairs."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In

from ..payload import config_write_layout
from .rx import LinkRx
from .tx import LinkTx


class LinkPair(wiring.Component):
    """:class:`LinkTx` driving :class:`LinkRx`, as ``linkcodec sim link`` runs them:
    ports ``i_s0`` .., ``o_s0`` ...

    The link between them is a register (and with retry, ``LinkRx``'s ``o_ack`` drives
    ``LinkTx``'s ``i_ack`` directly). A write of 1 to ``i_config`` (address 0) makes
    it pause: it then takes no word in about a quarter of the cycles (a 16-bit LFSR
    decides), so the channel both stalls the transmitter and starves the receiver; 0
    (the reset value) makes it a plain register."""

    def __init__(self, **params):
        self.tx, self.rx = pair_blocks(self, **params)
        super().__init__({"i_config": In(stream.Signature(
            config_write_layout(addr_width=1, data_width=1))), **pair_members(self.tx, self.rx)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.tx, m.submodules.rx = self.tx, self.rx
        if self.tx.retry_depth:
            m.d.comb += self.tx.i_ack.eq(self.rx.o_ack)
        pausing = Signal()
        m.d.comb += self.i_config.ready.eq(1)
        with m.If(self.i_config.valid & (self.i_config.payload.addr == 0)):
            m.d.sync += pausing.eq(self.i_config.payload.data)
        lfsr = Signal(16, init=0xACE1)
        m.d.sync += lfsr.eq(Cat(lfsr[1:], lfsr[0] ^ lfsr[2] ^ lfsr[3] ^ lfsr[5]))
        held = Signal.like(self.tx.o.payload)
        full = Signal()
        take = ~full | self.rx.i.ready
        m.d.comb += [self.tx.o.ready.eq(take & ~(pausing & (lfsr[:2] == 0))),
                     self.rx.i.valid.eq(full), self.rx.i.payload.eq(held)]
        with m.If(self.rx.i.ready):
            m.d.sync += full.eq(0)
        with m.If(self.tx.o.valid & self.tx.o.ready):
            m.d.sync += [full.eq(1), held.eq(self.tx.o.payload)]
        connect_pair(m, self, self.tx, self.rx)
        return m


def pair_blocks(holder, **params):
    """``(LinkTx(**params), LinkRx(**params))`` for ``holder``, a design that holds both;
    if the parameters are refused, ``holder`` is not an unused component (Amaranth warns
    of those)."""
    try:
        return LinkTx(**params), LinkRx(**params)
    except (TypeError, ValueError):
        holder._MustUse__silence = True
        raise


def pair_members(tx, rx):
    """The ports of a design in which ``tx`` (a :class:`LinkTx`) drives ``rx`` (a
    :class:`LinkRx`) over a channel of its own: every port of each but their link sides
    (``o``, ``i``) and return channel (``i_ack``, ``o_ack``)."""
    members = {name: member for name, member in tx.signature.members.items()
               if name not in ("o", "i_ack")}
    members.update({name: member for name, member in rx.signature.members.items()
                    if name not in ("i", "o_ack")})
    return members


def connect_pair(m, pair, tx, rx):
    """Connect the ports of ``pair`` that :func:`pair_members` gave it to ``tx``'s and
    ``rx``'s, in ``m``."""
    for name in pair_members(tx, rx):
        block = tx if name in tx.signature.members else rx
        if name.startswith("i_"):
            wiring.connect(m, wiring.flipped(getattr(pair, name)), getattr(block, name))
        else:
            wiring.connect(m, getattr(block, name), wiring.flipped(getattr(pair, name)))
