"""Run a codec block under Verilator on frames of symbols, checked against the golden model.

:func:`run_qlc` is what the tests and ``linkcodec sim`` call: it builds the block (one
build directory per block, lanes, word width and reset-time code), works out the input
beats and the output the golden model expects, runs :mod:`linkcodec.sim.stream_tb`, and
returns the figures: ``block``, ``lanes``, ``symbols``, ``cycles``,
``symbols_per_cycle``, ``bit_exact``.
"""

import hashlib
import json
import random
import tempfile
from pathlib import Path

import numpy as np

from ..rtl.payload import pack, symbol_layout, unpack, word_layout
from ..rtl.qlc import QlcDecoder, QlcEncoder, config_layout, config_writes, default_word_width
from . import runner

__all__ = ["BLOCKS", "encoder_beats", "frame_words", "decoder_beats", "run_case", "run_qlc"]

BLOCKS = {"qlc-encoder": QlcEncoder, "qlc-decoder": QlcDecoder}


def encoder_beats(frames, lanes):
    """Symbol beats (dicts) that carry ``frames`` through a block with ``lanes`` lanes."""
    beats = []
    for frame in frames:
        frame = np.asarray(frame, dtype=np.uint8)
        if frame.size == 0:
            beats.append({"symbols": [0] * lanes, "count": 0, "last": 1})
            continue
        padded = np.zeros(-(-frame.size // lanes) * lanes, dtype=np.uint8)
        padded[:frame.size] = frame
        rows = padded.reshape(-1, lanes).tolist()
        for index, row in enumerate(rows):
            final = index == len(rows) - 1
            count = frame.size - index * lanes if final else lanes
            beats.append({"symbols": row[:count] + [0] * (lanes - count), "count": count,
                          "last": int(final)})
    return beats


def decoder_beats(frames, lanes, *, error_after=None):
    """The beats a decoder emits for ``frames``.

    With ``error_after`` the last frame holds a fault after that many good symbols: the
    decoder emits those, then ends the frame with ``error = 1, last = 1`` in the beat
    that would have held the next symbol (see ``QlcDecoder``).
    """
    frames = list(frames)
    if error_after is None:
        return [dict(beat, error=0) for beat in encoder_beats(frames, lanes)]
    head = [dict(beat, error=0) for beat in encoder_beats(frames[:-1], lanes)]
    good = np.asarray(frames[-1][:error_after], np.uint8)
    body = [dict(beat, error=0) for beat in encoder_beats([good], lanes)] if good.size else []
    if good.size % lanes:
        body[-1]["error"] = 1
    else:
        if body:
            body[-1]["last"] = 0
        body.append({"symbols": [0] * lanes, "count": 0, "last": 1, "error": 1})
    return head + body


def frame_words(data, nbits, word_width):
    """The words (dicts) that carry a coded frame, as ``docs/bitstream.md`` defines them."""
    width_bytes = word_width // 8
    count = max(1, -(-nbits // word_width))
    buffer = bytes(data) + bytes(count * width_bytes - len(data))
    words = []
    for index in range(count):
        chunk = buffer[index * width_bytes:(index + 1) * width_bytes]
        final = index == count - 1
        words.append({"data": int.from_bytes(chunk, "big"),
                      "bits": nbits - index * word_width if final else word_width,
                      "last": int(final)})
    return words


def _code_digest(code):
    return hashlib.sha256(
        bytes(code.layout.suffix_bits) + np.asarray(code.layout.sizes, np.uint16).tobytes()
        + np.asarray(code.symbol_to_rank, np.uint8).tobytes()).hexdigest()[:10]


def run_case(block, *, lanes, word_width=None, reset_code=None, config=(), inputs,
             expected, idle=0.0, stall=0.0, seed=None, build_root=None, settle=8):
    """Build ``block`` and run it on ``inputs`` (dicts), scoring against ``expected``.

    Returns a dict with the output beats (dicts), ``bit_exact``, ``cycles`` (first input
    transfer to last output transfer, inclusive) and ``seed``. After the input is sent
    and the expected beats are in, the testbench watches ``settle`` more cycles for
    anything extra.
    """
    cls = BLOCKS[block]
    word_width = default_word_width(lanes) if word_width is None else word_width
    dut = cls(lanes=lanes, word_width=word_width, code=reset_code)
    if seed is None:
        seed = random.SystemRandom().randrange(1 << 31)
    if block == "qlc-encoder":
        in_layout, out_layout = symbol_layout(lanes), word_layout(word_width)
    else:
        in_layout, out_layout = word_layout(word_width), symbol_layout(lanes, error=True)

    build_root = Path(build_root or runner.BUILD_ROOT)
    build_dir = build_root / f"{block}-l{lanes}-w{word_width}-{_code_digest(dut.code)}"
    sim = runner.build(dut, name="top", build_dir=build_dir)

    case = {
        "seed": seed,
        "idle": idle,
        "stall": stall,
        "settle": settle,
        "config": [pack(config_layout, write) for write in config],
        "input": [pack(in_layout, beat) for beat in inputs],
        "expected": [pack(out_layout, beat) for beat in expected],
    }
    # Generous but finite: every beat may wait out idle and stall cycles.
    slack = 1.0 / max(1e-3, (1 - idle) * (1 - stall))
    case["cycle_limit"] = int((len(inputs) + len(expected)) * 4 * slack) + 2000
    with tempfile.TemporaryDirectory(prefix="linkcodec-") as scratch:
        case_path = Path(scratch) / "case.json"
        result_path = Path(scratch) / "result.json"
        case_path.write_text(json.dumps(case))
        runner.run_testbench(sim, name="top", build_dir=build_dir,
                             test_module="linkcodec.sim.stream_tb",
                             extra_env={"LINKCODEC_CASE": str(case_path),
                                        "LINKCODEC_RESULT": str(result_path)},
                             seed=seed)
        if not result_path.exists():
            raise RuntimeError(f"the testbench wrote no result; see {build_dir / 'test.log'}")
        result = json.loads(result_path.read_text())

    output = [unpack(out_layout, beat) for beat in result["output"]]
    return {
        "output": output,
        "expected": expected,
        "bit_exact": result["output"] == case["expected"],
        "input_cycles": result["input_cycles"],
        "output_cycles": result["output_cycles"],
        "cycles": _span(result["input_cycles"], result["output_cycles"]),
        "seed": seed,
        "build_dir": str(build_dir),
    }


def _span(input_cycles, output_cycles):
    """Cycles from the first input transfer to the last output transfer, inclusive."""
    if not input_cycles or not output_cycles:
        return 0
    return output_cycles[-1] - input_cycles[0] + 1


def run_qlc(block, frames, *, lanes, code, word_width=None, runtime_config=True, idle=0.0,
            stall=0.0, seed=None, build_root=None):
    """Run a QLC block on ``frames`` (uint8 arrays) coded with ``code``.

    With ``runtime_config`` the block is built with the base code and ``code`` is loaded
    through ``i_config`` before the frames; otherwise ``code`` is set at elaboration.
    """
    if block not in BLOCKS:
        raise ValueError(f"unknown block {block!r}; expected one of {', '.join(BLOCKS)}")
    word_width = default_word_width(lanes) if word_width is None else word_width
    frames = [np.asarray(frame, dtype=np.uint8).reshape(-1) for frame in frames]
    # Per frame: its input beats and its expected output beats.
    frame_inputs, frame_outputs = [], []
    for frame in frames:
        data, nbits = code.encode(frame)
        words = frame_words(data, nbits, word_width)
        beats = encoder_beats([frame], lanes)
        if block == "qlc-encoder":
            frame_inputs.append(beats)
            frame_outputs.append(words)
        else:
            frame_inputs.append(words)
            frame_outputs.append([dict(beat, error=0) for beat in beats])
    inputs = [beat for beats in frame_inputs for beat in beats]
    expected = [beat for beats in frame_outputs for beat in beats]
    table = "encoder" if block == "qlc-encoder" else "decoder"
    result = run_case(
        block, lanes=lanes, word_width=word_width,
        reset_code=None if runtime_config else code,
        config=config_writes(code, block=table) if runtime_config else (),
        inputs=inputs, expected=expected, idle=idle, stall=stall, seed=seed,
        build_root=build_root)
    symbols = int(sum(frame.size for frame in frames))
    cycles = result["cycles"]
    result["frames"] = []
    first_in = first_out = 0
    for frame, beats_in, beats_out in zip(frames, frame_inputs, frame_outputs):
        ins = result["input_cycles"][first_in:first_in + len(beats_in)]
        outs = result["output_cycles"][first_out:first_out + len(beats_out)]
        first_in, first_out = first_in + len(beats_in), first_out + len(beats_out)
        span = _span(ins, outs)
        result["frames"].append({
            "symbols": int(frame.size),
            "cycles": span,
            "symbols_per_cycle": round(frame.size / span, 4) if span else 0.0,
        })
    result.update({
        "block": block,
        "lanes": lanes,
        "word_width": word_width,
        "symbols": symbols,
        "symbols_per_cycle": symbols / cycles if cycles else 0.0,
    })
    return result
