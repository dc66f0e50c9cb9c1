"""Run the link (``rtl/link/``) under Verilator, scored against ``golden/link.py``.

:func:`run_link` runs :class:`~linkcodec.rtl.link.LinkPair` (``LinkTx`` driving
``LinkRx`` with nothing between) on frames dealt to its streams, with idle cycles at
every input and backpressure at every output, and checks every stream's symbols and frame
ends against what went in. In the same run it watches the channel between them and checks
``LinkTx``'s flits, stream by stream, byte for byte against the golden
:class:`~linkcodec.golden.link.FlitWriter`'s (the order in which the streams' flits share
the link depends on timing; each stream's own flits do not). The figures it returns are
those ``linkcodec sim link`` prints. :func:`retry_run` runs the link with go-back-N retry
through a channel that injects faults (:mod:`linkcodec.sim.channel`), and scores what
arrives, what was sent again and what the receiver took.
"""

import numpy as np

from ..golden.link import (FlitHeader, FlitWriter, StreamCheck, deal, flit_sequence,
                           is_status, link_stats, numbered, status_flit)
from ..rtl.link import (DEFAULT_ACK_LATENCY, DEFAULT_RETRY_DEPTH, LinkPair, LinkRx,
                        link_tables)
from ..rtl.blocks.beats import decoder_beats, symbol_beats
from .harness import first_mismatch, run_beats

__all__ = ["run_link", "retry_run", "flits_of_words", "words_of_flits", "link_io",
           "DEFAULT_ACK_DELAY"]

#: Cycles the return channel takes in a faulty run, unless told otherwise.
DEFAULT_ACK_DELAY = 16


def link_io(fmt, frames):
    """``(inputs, expected)`` beats per port of a :class:`LinkPair` for ``frames``
    (``(stream, symbols)`` pairs): each stream's frames in, the same out."""
    inputs, expected = {}, {}
    for index in range(fmt.streams):
        dtype = np.uint16 if fmt.symbol_bytes == 2 else np.uint8
        mine = [np.asarray(frame).astype(dtype, copy=False).reshape(-1)
                for stream, frame in frames if stream == index]
        inputs[f"i_s{index}"] = symbol_beats(mine, 1)
        expected[f"o_s{index}"] = decoder_beats(mine, 1)
    return inputs, expected


def golden_flits(fmt, frames, tables):
    """Each stream's data flits as the golden writer makes them (the table flits apart):
    ``(table_flits, {stream: [flit]})``."""
    table_flits = FlitWriter(fmt).load(tables)      # a first load, as it would go in band
    writer = FlitWriter(fmt, tables)    # LinkTx's start: the tables in both banks, bank 0
    per_stream = {index: [] for index in range(fmt.streams)}
    for stream, frame in frames:
        per_stream[stream] += writer.frame(frame, stream)
    return table_flits, per_stream


def words_of_flits(flits, link_bytes):
    """The link words (dicts of ``data``, ``bits``, ``last``) that carry ``flits``:
    :func:`flits_of_words` backwards."""
    return [{"data": int.from_bytes(flit[start:start + link_bytes], "big"),
             "bits": 8 * link_bytes, "last": int(start + link_bytes == len(flit))}
            for flit in flits for start in range(0, len(flit), link_bytes)]


def flits_of_words(words, link_bytes, flit_bytes):
    """The flits (bytes) that link words (dicts of ``data``) carry, in order."""
    per_flit = flit_bytes // link_bytes
    flits = []
    for start in range(0, len(words) - per_flit + 1, per_flit):
        flits.append(b"".join(int(word["data"]).to_bytes(link_bytes, "big")
                              for word in words[start:start + per_flit]))
    return flits


def run_link(frames, *, codec="qlc", streams=1, lanes=1, flit_bytes=256, link_bytes=64,
             tables=None, tables_in_band=True,
             idle="random", stall="random", seed=None, deal_frames=True, check_tx=True,
             build_root=None, faults=0, retry=True, retry_depth=None,
             ack_latency=DEFAULT_ACK_LATENCY, ack_delay=DEFAULT_ACK_DELAY,
             stream_numbers=None, simulator="verilator"):
    """Run ``frames`` (symbol arrays, dealt to the streams round robin; or ``(stream,
    symbols)`` pairs with ``deal_frames=False``) over the link; return the figures.

    ``retry_depth`` (without faults; default 0, and a key of the result) builds both ends
    with go-back-N retry (no fault comes, so nothing is sent again): ``LinkTx``'s flits
    are then checked numbered in order.

    Keys: ``codec``, ``streams``, ``lanes``, ``flit_bytes``, ``link_bytes`` (the bytes
    on the link: ``flits * flit_bytes``), ``link_word_bytes``, ``symbols``, ``cycles``,
    ``symbols_per_cycle``, ``flits``, ``raw_flits``, ``table_flits``, ``raw_bytes``,
    ``coded_bytes`` (the codec's own frame bytes), ``link_bytes_per_symbol``,
    ``latency_cycles`` (the longest any symbol took from ``LinkTx``'s input to
    ``LinkRx``'s output, with no idle cycle and no backpressure: the first symbol of a
    flit waits for the rest of it), ``bit_exact`` (the pair's output, every stream),
    ``tx_bit_exact`` (``LinkTx``'s flits against the golden writer's), ``seed``,
    ``tables_in_band`` (if not, the tables are fixed at elaboration: no table flit is
    counted, as none is sent; with them, the first table's flits are, as the golden
    writer sends them). ``simulator`` (``"verilator"`` or ``"icarus"``) runs every
    part of it (:func:`~linkcodec.sim.harness.run_beats`).

    ``faults`` with ``retry=False`` then puts that many faults
    (:mod:`linkcodec.sim.faults`, their seed the run's) on ``LinkTx``'s flits as they
    crossed the channel (on data flits only with ``stream_numbers``), and runs ``LinkRx``
    alone on what the channel gives, under the same idle cycles and backpressure. More
    keys: ``faults_injected``, ``faults_detected`` (without stream numbers, the faults
    whose flit fails its CRC: ``LinkRx`` drops it and gives the error beat to the stream
    its header names, if any; with them, a lost or spoilt flit whose loss the next good
    flit of its stream reports, and a repeat that is skipped, as the model of the
    receiver has it, which ``rx_bit_exact`` ties to ``LinkRx``), ``faults`` (per kind:
    injected and detected),
    ``crc_errors`` (flits that failed their CRC), ``retries`` (0),
    ``hangs`` (1 if ``LinkRx`` did not give every beat), ``frames_lost``,
    ``frames_duplicated``, ``symbols_wrong``, ``frames_flagged``
    (:func:`~linkcodec.sim.faults.score`), ``rx_bit_exact`` (``LinkRx`` gave what
    :func:`~linkcodec.sim.faults.lossy_beats` says a receiver without retry gives) and
    ``stream_numbers``; with stream numbers also ``symbols_hit`` (the symbols of the
    flits lost or spoilt), ``symbols_lost`` (the symbols sent that did not come out) and
    ``only_hit_lost`` (``LinkRx``'s output is exactly
    :func:`~linkcodec.sim.faults.hit_beats`: the frames as sent, each run of hit flits
    an error beat where their symbols were) and ``lost_at_end`` (hit flits that no good
    flit of their stream follows: no receiver without retry tells them).

    ``faults`` with ``retry`` runs instead :class:`~linkcodec.sim.channel.FaultyLink`:
    ``LinkTx`` and ``LinkRx`` with go-back-N retry (``retry_depth`` flits kept,
    ``ack_latency`` cycles before the sender goes back unasked), the channel injecting
    the faults on the flits as they cross (sent again included) and delaying the acks
    ``ack_delay`` cycles (:func:`retry_run` gives the keys).
    """
    if stream_numbers is None:           # the blocks' default: numbered unless with retry
        stream_numbers = not (retry if faults else retry_depth)
    if faults and retry:
        if stream_numbers:
            raise ValueError("stream_numbers is for a link without retry: faults with "
                             "stream_numbers need retry=False")
        if not check_tx:
            raise ValueError("faults go on LinkTx's flits as watched: check_tx=True")
        return retry_run(frames, codec=codec, streams=streams, flit_bytes=flit_bytes,
                         link_bytes=link_bytes, tables=tables,
                         tables_in_band=tables_in_band, idle=idle, stall=stall, seed=seed,
                         deal_frames=deal_frames, build_root=build_root, faults=faults,
                         retry_depth=retry_depth or DEFAULT_RETRY_DEPTH,
                         ack_latency=ack_latency, ack_delay=ack_delay,
                         simulator=simulator)
    if faults and not check_tx:
        raise ValueError("faults go on LinkTx's flits as watched: check_tx=True")
    frames = deal(frames, streams) if deal_frames else list(frames)
    retry_depth = 0 if faults else (retry_depth or 0)
    pair = LinkPair(codec=codec, streams=streams, lanes=lanes, flit_bytes=flit_bytes,
                    link_bytes=link_bytes, tables=tables, tables_in_band=tables_in_band,
                    retry_depth=retry_depth, ack_latency=ack_latency,
                    stream_numbers=stream_numbers)
    tables = pair.tx.tables
    fmt = pair.tx.format
    inputs, expected = link_io(fmt, frames)
    fixed = "" if tables_in_band else "_fixed"
    name = f"link_pair_{codec}_s{streams}_f{flit_bytes}_w{link_bytes}{fixed}"
    if retry_depth:
        name += f"_r{retry_depth}_a{ack_latency}"
    numbers = "_n" if stream_numbers else ""
    name += numbers
    pause = {"i_config": [{"addr": 0, "data": int(stall != "none")}]}
    # With faults and stream numbers the run goes on until every stream's status flit
    # has followed its last flit, so that a loss at a stream's end is told.
    settle = 8
    if faults and stream_numbers:
        settle = pair.tx.status_cycles + 16 * (flit_bytes // link_bytes + 4) * streams
    result = run_beats(pair, inputs=inputs, expected=expected, idle=idle, stall=stall,
                       seed=seed, build_root=build_root, name=name, config=pause,
                       settle=settle, simulator=simulator,
                       watch={"o": pair.tx.o.payload.shape()} if check_tx else None)
    table_flits, per_stream = golden_flits(fmt, frames, tables)
    if not tables_in_band:
        table_flits = []           # both ends hold the code from elaboration, nothing sent
    data_flits = [flit for flits in per_stream.values() for flit in flits]
    stats = link_stats(fmt, table_flits + data_flits, frames, tables)
    out = {
        "codec": codec, "streams": streams, "lanes": 1, "flit_bytes": flit_bytes,
        "tables_in_band": tables_in_band, "link_word_bytes": link_bytes,
        "retry_depth": retry_depth, "stream_numbers": stream_numbers,
        **_figures(stats, result),
    }
    if check_tx:
        # LinkTx's flits as they crossed the channel inside the pair, in the same run.
        got = flits_of_words(result["watched"]["o"], link_bytes, flit_bytes)
        out["tx_bit_exact"] = _tx_exact(fmt, got, per_stream)
    if faults:
        out.update(_faulty_run(got, frames, fmt=fmt, tables=tables, count=faults,
                               link_bytes=link_bytes, idle=idle, stall=stall,
                               seed=result["seed"], build_root=build_root,
                               name=f"link_rx_{codec}_s{streams}_f{flit_bytes}_w{link_bytes}"
                                    f"{fixed}{numbers}",
                               tables_in_band=tables_in_band, simulator=simulator))
    if idle == "none" and stall == "none":
        out["latency_cycles"] = _worst_latency(result, fmt.streams)
    else:
        quiet = run_beats(pair, inputs=inputs, expected=expected, idle="none",
                          stall="none", seed=result["seed"], build_root=build_root, name=name,
                          simulator=simulator)
        out["latency_cycles"] = _worst_latency(quiet, fmt.streams)
    return out


def _faulty_run(sent, frames, *, fmt, tables, count, link_bytes, idle, stall, seed,
                build_root, name, tables_in_band, simulator="verilator"):
    """LinkRx alone on ``sent`` (LinkTx's flits in link order) with ``count`` faults."""
    from .faults import (FAULT_KINDS, arrivals, crc_good, hit_beats, inject, lossy_beats,
                         score)

    by_stream = fmt.sequence == "stream"
    received, injected = inject(sent, count, seed=seed, data_only=by_stream)
    expected, spoilt, verdicts = lossy_beats(fmt, tables, received)
    rx = LinkRx(codec=fmt.codec, streams=fmt.streams, flit_bytes=fmt.flit_bytes,
                link_bytes=link_bytes, tables=tables, tables_in_band=tables_in_band,
                stream_numbers=by_stream)
    hangs = 0
    try:
        result = run_beats(rx, inputs={"i": words_of_flits(received, link_bytes)},
                           expected=expected, idle=idle, stall=stall, seed=seed,
                           build_root=build_root, name=name, simulator=simulator)
        output = result["output"]
        hangs = int(any(len(output[port]) < len(beats) for port, beats in expected.items()))
    except RuntimeError:
        result, output, hangs = {"bit_exact": False}, {port: [] for port in expected}, 1
    # Where each sent flit arrived first (none if lost), and for each sent flit where
    # the next good flit of its stream arrived (none at its stream's end): the flit whose
    # verdict says whether a loss before it was reported.
    hit = {fault.flit for fault in injected if fault.kind != "duplicate"}
    order = arrivals(len(sent), injected)
    first = {}
    for position, index in enumerate(order):
        first.setdefault(index, position)
    streams = [FlitHeader.unpack(flit).stream for flit in sent]
    following, next_good = [None] * len(sent), {}
    for index in reversed(range(len(sent))):
        following[index] = next_good.get(streams[index])
        if index not in hit:
            next_good[streams[index]] = first[index]
    kinds = {kind: {"injected": 0, "detected": 0} for kind in FAULT_KINDS}
    for fault in injected:
        kinds[fault.kind]["injected"] += 1
        if not by_stream:                   # the CRC alone: a lost or repeated flit
            seen = fault.spoilt is not None and not crc_good(fault.spoilt)   # is unseen
        elif fault.kind == "duplicate":     # the second copy skipped
            seen = verdicts[first[fault.flit] + 1] == "skipped"
        else:
            # Lost or spoilt (refused by its CRC): the user is told when the stream's
            # next good flit reports the loss before its own symbols.
            after = following[fault.flit]
            seen = ((fault.spoilt is None or not crc_good(fault.spoilt))
                    and after is not None and verdicts[after] == "reported")
        kinds[fault.kind]["detected"] += int(seen)
    detected = sum(kind["detected"] for kind in kinds.values())
    out = {"faults_injected": len(injected), "faults_detected": detected,
           "faults": kinds, "retries": 0, "hangs": hangs, **score(frames, output),
           "crc_errors": spoilt, "rx_bit_exact": bool(result["bit_exact"]),
           "stream_numbers": by_stream}
    if by_stream:
        # What only the hit flits' loss costs: their symbols, each run of them an
        # error beat where it was; LinkRx's output against that.
        out["symbols_hit"] = sum(FlitHeader.unpack(sent[index]).count for index in hit)
        out["symbols_lost"] = (sum(np.asarray(frame).size for _, frame in frames)
                               - sum(beat["count"] for beats in output.values()
                                     for beat in beats))
        out["only_hit_lost"] = output == hit_beats(fmt, tables, sent, hit)
        # Hit flits after which no good flit of their stream came: no receiver without
        # retry can tell them (they are the faults not detected, if it works).
        out["lost_at_end"] = sum(1 for index in hit if following[index] is None)
    return out


def _figures(stats, result):
    """The keys every run of the link gives: its flits' :class:`LinkStats` and the run's
    cycles, bit-exactness and seed (and where it first went wrong, if it did)."""
    figures = {
        "symbols": stats.symbols, "cycles": result["cycles"],
        "symbols_per_cycle": round(stats.symbols / result["cycles"], 4)
        if result["cycles"] else 0.0,
        "flits": stats.flits, "raw_flits": stats.raw_flits,
        "table_flits": stats.table_flits, "link_bytes": stats.link_bytes,
        "raw_bytes": stats.raw_bytes, "coded_bytes": stats.coded_bytes,
        "link_bytes_per_symbol": round(stats.link_bytes / stats.symbols, 4)
        if stats.symbols else 0.0,
        "bit_exact": result["bit_exact"], "seed": result["seed"],
    }
    if not result["bit_exact"]:
        figures["mismatch"] = first_mismatch(result)
    return figures


def _tx_exact(fmt, flits, per_stream):
    """Whether ``flits`` (as ``LinkTx`` sent them, in link order) are each stream's golden
    flits (``per_stream``) in order, and with retry, each numbered with its place in link
    order and sealed (:func:`~linkcodec.golden.link.numbered`); numbered stream by stream,
    the status flits among them each the stream's next number (a :class:`StreamCheck`
    follows each stream)."""
    taken = {stream: 0 for stream in per_stream}
    checks = {stream: StreamCheck() for stream in per_stream}   # (stream numbers)
    for index, flit in enumerate(flits):
        header = FlitHeader.unpack(flit)
        stream = header.stream
        mine = per_stream.get(stream, [])
        if fmt.sequence == "stream" and is_status(header):
            # A status flit between them: numbered as the stream's next flit.
            if stream not in checks or flit != status_flit(
                    fmt, stream, checks[stream].expected, bank=header.bank):
                return False
            continue
        if taken.get(stream, 0) >= len(mine):
            return False
        want = mine[taken[stream]]
        if flit != (numbered(fmt, want, index) if fmt.sequence == "link" else want):
            return False
        if fmt.sequence == "stream":
            checks[stream].take(flit[fmt.sequence_offset], header.last)
        taken[stream] += 1
    return all(taken[stream] == len(mine) for stream, mine in per_stream.items())


def _rate(flits, count):
    """The channel's rate (a flit hit with a chance of 1 in ``2 ** rate``) that puts
    ``count`` faults on about half of ``flits`` first sendings."""
    rate = 0
    while rate < 16 and flits >> (rate + 1) >= 2 * count:
        rate += 1
    return rate


def retry_run(frames, *, codec="qlc", streams=1, flit_bytes=256, link_bytes=64, tables=None,
              tables_in_band=True, idle="random", stall="random", seed=None,
              deal_frames=True, build_root=None, faults=0,
              retry_depth=DEFAULT_RETRY_DEPTH, ack_latency=DEFAULT_ACK_LATENCY,
              ack_delay=DEFAULT_ACK_DELAY, kinds=None, simulator="verilator"):
    """``frames`` over a link with go-back-N retry and a channel that injects ``faults``
    (:class:`~linkcodec.sim.channel.FaultyLink`), scored against what went in.

    The keys of :func:`run_link`, and: ``retry_depth``, ``ack_latency``, ``ack_delay``,
    ``faults_injected``, ``faults`` (per kind of
    :data:`~linkcodec.sim.channel.CHANNEL_FAULTS`: injected and detected; a spoilt flit
    is detected when ``LinkRx`` refuses it, a lost one when it is sent again (or was a
    copy sent again of a flit ``LinkRx`` had taken already), a repeated
    one when at most one of its copies is taken, a stall of the return channel when the
    link goes on to the end without a hang), ``faults_detected`` (their sum),
    ``retries`` (the times the sender went back), ``flits_sent`` (sendings, again
    included), ``hangs``, ``frames_lost``, ``frames_duplicated``, ``symbols_wrong``,
    ``frames_flagged`` (:func:`~linkcodec.sim.faults.score`), ``bit_exact``,
    ``rx_model_exact`` (the flits ``LinkRx``'s retry check passed on to its reader are
    exactly those a go-back-N receiver, modelled on the flits the channel gave, takes,
    and those are every flit first sent, in order), ``tx_bit_exact`` (each flit sent
    first is the golden writer's, numbered in order, and each sent again is the same
    flit), ``latency_cycles`` (a second run, with no fault, idle cycle or backpressure:
    the channel's two flits included). ``kinds`` (names of CHANNEL_FAULTS) limits the
    faults to some kinds; ``simulator`` is as for :func:`run_link`.
    """
    from .channel import (CHANNEL_FAULTS, CONFIG_COUNT, CONFIG_KINDS, CONFIG_RATE,
                          CONFIG_SEED, fault_layout, shared_faulty_link)
    from .faults import crc_good, score

    kinds = CHANNEL_FAULTS if kinds is None else tuple(kinds)
    unknown = [kind for kind in kinds if kind not in CHANNEL_FAULTS]
    if unknown or not kinds:
        raise ValueError(f"fault kinds are {', '.join(CHANNEL_FAULTS)}, not {unknown or kinds}")
    frames = deal(frames, streams) if deal_frames else list(frames)
    link = shared_faulty_link(codec=codec, streams=streams, flit_bytes=flit_bytes,
                              link_bytes=link_bytes, tables=tables,
                              tables_in_band=tables_in_band, retry_depth=retry_depth,
                              ack_latency=ack_latency, ack_delay=ack_delay)
    tables = link.tx.tables
    fmt = link.tx.format
    inputs, expected = link_io(fmt, frames)
    table_flits, per_stream = golden_flits(fmt, frames, tables)
    if not tables_in_band:
        table_flits = []
    data_flits = [flit for flits in per_stream.values() for flit in flits]
    stats = link_stats(fmt, table_flits + data_flits, frames, tables)
    if seed is None:
        import random
        seed = random.SystemRandom().randrange(1 << 31)
    mask = sum(1 << CHANNEL_FAULTS.index(kind) for kind in kinds)
    config = {"i_config": [
        {"addr": CONFIG_SEED, "data": (seed * 2654435761) & 0xFFFFFFFF or 1},
        {"addr": CONFIG_COUNT, "data": int(faults)},
        {"addr": CONFIG_RATE, "data": _rate(stats.flits, max(1, int(faults)))},
        {"addr": CONFIG_KINDS, "data": mask}]}
    fixed = "" if tables_in_band else "_fixed"
    name = (f"link_retry_{codec}_s{streams}_f{flit_bytes}_w{link_bytes}_d{retry_depth}"
            f"_a{ack_latency}_c{ack_delay}{fixed}")
    word = link.tx.o.payload.shape()
    watch = {"sent": word, "received": word, "accepted": word, "faults": fault_layout}
    result = run_beats(link, inputs=inputs, expected=expected, idle=idle, stall=stall,
                       seed=seed, build_root=build_root, name=name, config=config,
                       watch=watch, simulator=simulator)
    output = result["output"]
    hangs = int(any(len(output[port]) < len(beats) for port, beats in expected.items()))
    watched = {name: flits_of_words(result["watched"][name], link_bytes, flit_bytes)
               for name in ("sent", "received", "accepted")}
    sent, received = watched["sent"], watched["received"]
    log = result["watched"]["faults"]

    # The sender: first sendings numbered in order, each sent again the same flit
    # (``places``: each sending's place among the first sendings; a number sent again is
    # of the latest first sending that has it).
    first, retries, differ, places = [], 0, [], []
    previous = None
    for sending, flit in enumerate(sent):
        number = flit_sequence(fmt, flit)
        if previous is not None and number != (previous + 1) % 256:
            retries += 1
        previous = number
        if number == len(first) % 256:
            places.append(len(first))
            first.append(flit)
        else:
            index = len(first) - 1 - (len(first) - 1 - number) % 256
            places.append(index)
            if index < 0 or first[index] != flit:     # (a number never sent: skipped)
                differ.append(sending)
    tx_exact = not differ and _tx_exact(fmt, first, per_stream)

    # A go-back-N receiver on what the channel gave; RetryRx must pass on what it takes.
    taken, took = [], []
    for flit in received:
        ok = crc_good(flit) and flit_sequence(fmt, flit) == len(taken) % 256
        took.append(ok)
        if ok:
            taken.append(flit)
    rx_model_exact = watched["accepted"] == taken and taken == first
    last_sent = {place: sending for sending, place in enumerate(places)}

    # Each fault against what became of its flit.
    counts = {kind: {"injected": 0, "detected": 0} for kind in kinds}
    faults_at, offset, last = {}, 0, -1
    for entry in log:
        flit = entry["flit"] + offset
        if flit < last:
            offset += 1 << 16
            flit += 1 << 16
        last = flit
        faults_at[flit] = CHANNEL_FAULTS[entry["kind"]]
    position = 0                       # of the sending's first copy among those received
    taken_before = 0                   # flits the receiver took before it
    for index, flit in enumerate(sent):
        kind = faults_at.get(index)
        copies = {"drop": 0, "duplicate": 2}.get(kind, 1)
        if kind is not None:
            counts[kind]["injected"] += 1
            if kind in ("flip", "burst", "garbage"):
                found = position < len(took) and not took[position]
            elif kind == "duplicate":
                found = sum(took[position:position + 2]) <= 1
            elif kind == "drop":
                # Needed (the receiver had not taken it yet) and so sent again, or a copy
                # the receiver had taken already.
                found = (taken_before > places[index]
                         or last_sent[places[index]] > index)
            else:
                found = not hangs
            counts[kind]["detected"] += int(found)
        taken_before += sum(took[position:position + copies])
        position += copies
    out = {
        "codec": codec, "streams": streams, "lanes": 1, "flit_bytes": flit_bytes,
        "tables_in_band": tables_in_band, "link_word_bytes": link_bytes,
        "retry_depth": retry_depth, "ack_latency": ack_latency, "ack_delay": ack_delay,
        **_figures(stats, result), "tx_bit_exact": tx_exact,
        "tx_sent_again_differ": differ[:10], "rx_model_exact": rx_model_exact,
        "faults_injected": sum(kind["injected"] for kind in counts.values()),
        "faults_detected": sum(kind["detected"] for kind in counts.values()),
        "faults": counts, "retries": retries, "flits_sent": len(sent), "hangs": hangs,
        **score(frames, {port: beats for port, beats in output.items()
                         if port.startswith("o_s")}),
    }
    # The latency with retry and the channel's two flits, and no fault, idle or stall.
    quiet = {"i_config": [{**write, "data": 0} if write["addr"] == CONFIG_COUNT else write
                          for write in config["i_config"]]}
    out["latency_cycles"] = _worst_latency(run_beats(
        link, inputs=inputs, expected=expected, idle="none", stall="none", seed=seed,
        build_root=build_root, name=name, config=quiet, simulator=simulator), streams)
    return out


def _worst_latency(result, streams):
    """The most cycles any symbol took from a pair's input to its output in ``result``
    (a run with no idle cycle and no backpressure)."""
    # A lane a stream: beat k out carries the symbol of beat k in.
    worst = 0
    for index in range(streams):
        ins = result["input_cycles"].get(f"i_s{index}", [])
        outs = result["output_cycles"].get(f"o_s{index}", [])
        worst = max([worst, *(out - into for into, out in zip(ins, outs))])
    return worst


def fitted_link_tables(codec, frames):
    """Tables fitted on ``frames`` (e4m3 arrays; bf16 for the exponent codec) for a link
    of ``codec``."""
    from ..rtl.blocks import get_block

    return link_tables(codec, get_block(f"{codec}-encoder").fitted_tables(list(frames)))
