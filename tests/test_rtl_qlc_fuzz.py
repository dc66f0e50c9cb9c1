"""The QLC decoder against the golden word-level model on any input: every 11-bit code
window, fuzzing from a real tensor's symbols, and the word-fault rules of
``docs/bitstream.md``; and ``linkcodec sim --fuzz`` and the fuzzer's own parts.

Differential fuzzing with random symbols and every kind of fault (word faults included),
at every lane count, is the contract's (``test_contract.py``). Simulations vary the pause
pattern; the seed is printed (replay with ``LINKCODEC_SEED``). They share the Verilator
builds of the contract suite (the same block, lanes and word width) and run in its xdist
groups.
"""

import json

import numpy as np
import pytest
from amaranth.hdl import Fragment
from cases import fuzz_summary

from linkcodec.bundled import bundled_files
from linkcodec.cli import main
from linkcodec.golden.qlc import QlcCode, QlcLayout
from linkcodec.sim import fuzz
from linkcodec.rtl.blocks.beats import decoder_beats, frame_words, split_frames
from linkcodec.sim.fuzz import (DEFAULT_MIX, KINDS, FuzzFrame, check_frames,
                                code_space_frames, fuzz_frames, run_fuzz)

BASE = QlcCode.base()


def bundled_pool():
    return np.load(bundled_files("ffn2_act", layers=[0])[0]).reshape(-1)


def adapted_code():
    """The code of a real activation tensor (not the base layout)."""
    code = QlcCode.from_pmf(np.bincount(bundled_pool(), minlength=256))
    assert code.layout != QlcLayout.base()
    return code


def on_decoder(lanes, *values, id=None):
    """Cases that share the decoder's build run on one xdist worker (as test_rtl_qlc)."""
    return pytest.param(lanes, *values, marks=pytest.mark.xdist_group(f"qlc-decoder-{lanes}"),
                        id=id)


# -- simulations -----------------------------------------------------------------------

@pytest.mark.parametrize(("lanes", "layout", "pattern"), [
    on_decoder(1, "base", "random", id="base-1"),
    on_decoder(4, "adapted", "bursty", id="adapted-4")])
def test_every_code_window_decodes_as_golden_says(lanes, layout, pattern, seed):
    """Each 11-bit pattern starts a frame, then a valid code: 4,096 frames in one run.
    Both layouts and both lane counts, in two runs (about 12 s each) rather than four."""
    code = BASE if layout == "base" else adapted_code()
    frames = code_space_frames(code, word_width=max(16, 8 * lanes))
    report = check_frames(frames, lanes=lanes, code=code, seed=seed, idle=pattern,
                          stall=pattern)
    assert report["frames"] == 4096 and report["golden_errors"] > 0
    assert report["mismatches"] == 0 and report["hangs"] == 0, fuzz_summary(report)


NO_WORD_FAULTS = {kind: weight for kind, weight in DEFAULT_MIX.items() if kind != "bits"}


@pytest.mark.parametrize(("lanes", "pattern"), [on_decoder(1, "hold", id="1"),
                                                on_decoder(4, "random", id="4")])
def test_fuzz_from_real_symbols_without_word_faults(lanes, pattern, seed):
    """Mutations of a real tensor's symbols, coded with its own code, with flipped bits,
    frames cut short and random words but no word faults (so every error is a code's):
    0 mismatches, 0 hangs."""
    report = run_fuzz(200, lanes=lanes, code=adapted_code(), pool=bundled_pool(),
                      mix=NO_WORD_FAULTS, seed=seed, idle=pattern, stall=pattern)
    assert report["frames"] == 200 and report["faults_injected"] > 0
    assert report["mismatches"] == 0 and report["hangs"] == 0, fuzz_summary(report)


def six_bit_words(symbols, width=16):
    """Words of base-code symbols 0..7 (6-bit codes), and the frame."""
    symbols = np.asarray(symbols, dtype=np.uint8)
    return frame_words(*BASE.encode(symbols), width), symbols


def frames_with(words, symbols):
    """The faulty frame, then a good frame that must decode in full."""
    follow = np.array([100, 101, 102], dtype=np.uint8)
    return [FuzzFrame(words, "bits", symbols),
            FuzzFrame(frame_words(*BASE.encode(follow), 16), "good", follow)]


def run_rule(frames, seed, pattern):
    report = check_frames(frames, lanes=1, code=BASE, seed=seed, idle=pattern, stall=pattern)
    assert report["mismatches"] == 0 and report["hangs"] == 0, fuzz_summary(report)


@pytest.mark.xdist_group("qlc-decoder-1")
def test_a_short_non_final_word_is_a_fault_where_its_bits_begin(seed):
    """Words (16, 8, 16 last) of 6-bit codes: a fault at bit 16, so 2 symbols, then the
    error beat (today's decoder reads the 8 bits and carries on)."""
    words, symbols = six_bit_words(range(8))
    words[1]["bits"] = 8
    run_rule(frames_with(words, symbols), seed, "random")


@pytest.mark.xdist_group("qlc-decoder-1")
def test_an_overlong_word_is_a_fault_where_its_bits_begin(seed):
    """Words of 6-bit codes (16, 17, 16 last): a fault at bit 16, so exactly the 2 codes
    before it, then the error beat; a final word of 17 bits (16, 16, 17 last): a fault at
    bit 32 (5 codes); a first word of 17 bits: no symbol, the error beat."""
    frames = []
    for index in (1, 2, 0):
        words, symbols = six_bit_words(range(8))
        words[index]["bits"] = 17
        frames += frames_with(words, symbols)
    run_rule(frames, seed, "bursty")


@pytest.mark.xdist_group("qlc-decoder-1")
def test_final_words_of_w_bits_and_of_0_bits_are_fine(seed):
    """A final word with bits = W, and a final word with bits = 0 after full words, end
    their frames normally; pad bits past a final word's bits are never decoded."""
    full, full_symbols = six_bit_words(range(8))          # 48 bits: 16, 16, 16 last
    zero, zero_symbols = six_bit_words(range(8))
    zero[-1]["last"] = 0
    zero.append({"data": 0xFFFF, "bits": 0, "last": 1})
    padded, padded_symbols = six_bit_words([1, 2, 3])     # 18 bits: 16, 2 last
    padded[-1]["data"] |= 0x3FFF                          # set the 14 pad bits
    frames = [FuzzFrame(full, "good", full_symbols), FuzzFrame(zero, "bits", zero_symbols),
              FuzzFrame(padded, "flip", padded_symbols)]
    _, errors = fuzz.expected_beats(BASE, frames, lanes=1, word_width=16)
    assert errors == [False, False, False]
    run_rule(frames, seed, "hold")


@pytest.mark.xdist_group("qlc-decoder-1")
def test_linkcodec_sim_fuzz(capsys, tmp_path, seed):
    """``linkcodec sim qlc-decoder --fuzz N --json FILE``: the keys, the seed, the exit
    code (0 only when clean)."""
    path = tmp_path / "act.npy"
    np.save(path, bundled_pool()[:5000])
    code = main(["sim", "qlc-decoder", "--fuzz", "60", "--json", "--seed", str(seed),
                 str(path)])
    out = capsys.readouterr().out
    report = json.loads(out[out.index("\n{") + 1:])   # after the seed fixture's line
    for key in ("block", "lanes", "seed", "word_width", "layout", "frames",
                "faults_injected", "mismatches", "hangs", "symbols", "cycles", "files"):
        assert key in report, key
    assert (report["block"], report["lanes"], report["word_width"]) == ("qlc-decoder", 1, 16)
    assert (report["seed"], report["frames"], report["layout"]) == (seed, 60, "optimal")
    assert code == (0 if report["mismatches"] == report["hangs"] == 0 else 1)


# -- without a simulator ---------------------------------------------------------------

def test_linkcodec_sim_refuses_fuzz_misuse(capsys):
    assert main(["sim", "qlc-decoder"]) == 2
    assert "give at least one FILE" in capsys.readouterr().err
    assert main(["sim", "qlc-encoder", "--fuzz", "5"]) == 2
    assert ("--fuzz fuzzes a decoder (qlc-decoder or huffman-decoder or huffman-decoder-bf16), "
            "not qlc-encoder") in capsys.readouterr().err
    assert main(["sim", "qlc-decoder", "--fuzz", "0"]) == 2


def test_fuzz_frames_cover_every_kind_and_replay_from_the_seed():
    frames = fuzz_frames(BASE, 500, word_width=16, rng=np.random.default_rng(4))
    again = fuzz_frames(BASE, 500, word_width=16, rng=np.random.default_rng(4))
    assert [frame.words for frame in frames] == [frame.words for frame in again]
    assert {frame.kind for frame in frames} == set(KINDS)
    wanted, errors = fuzz.expected_beats(BASE, frames, lanes=2, word_width=16)
    by_kind = {kind: [error for frame, error in zip(frames, errors) if frame.kind == kind]
               for kind in KINDS}
    assert not any(by_kind["good"]) and all(by_kind["bits"])
    assert 0 < sum(by_kind["flip"]) < len(by_kind["flip"])
    for frame in frames:
        if frame.kind in ("good", "random", "flip", "cut"):   # well-formed bits counts
            assert all(word["bits"] == 16 for word in frame.words[:-1])
            assert 0 <= frame.words[-1]["bits"] <= 16
        assert [word["last"] for word in frame.words] == [0] * (len(frame.words) - 1) + [1]
    good = [frame for frame in frames if frame.kind == "good"]
    assert all(beats == decoder_beats([frame.symbols], 2)
               for frame, beats in zip(frames, wanted) if frame.kind == "good")
    assert good


def test_fuzz_frames_from_a_pool_are_runs_of_it_with_a_few_symbols_replaced():
    rng = np.random.default_rng(2)
    pool = np.zeros(10_000, dtype=np.uint8)
    lengths = [fuzz.pool_symbols(rng, pool, count).size for count in (0, 5, 50, 20_000)]
    assert lengths == [0, 5, 50, 10_000]
    replaced = [np.count_nonzero(fuzz.pool_symbols(rng, pool, 60)) for _ in range(200)]
    assert max(replaced) <= 3 and sum(replaced) > 0
    frames = fuzz_frames(adapted_code(), 50, word_width=32, rng=rng, pool=bundled_pool(),
                         mix={"good": 1})
    _, errors = fuzz.expected_beats(adapted_code(), frames, lanes=1, word_width=32)
    assert not any(errors)


def test_fuzz_arguments_are_checked():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="unknown frame kind 'wat'"):
        fuzz_frames(BASE, 3, word_width=16, rng=rng, mix={"wat": 1})
    with pytest.raises(ValueError, match="mix weights must be non-negative"):
        fuzz_frames(BASE, 3, word_width=16, rng=rng, mix={"good": 0})
    with pytest.raises(ValueError, match="word_width must be a positive multiple of 8"):
        fuzz_frames(BASE, 3, word_width=12, rng=rng)
    with pytest.raises(TypeError, match="code must be a QlcCode"):
        fuzz_frames("base", 3, word_width=16, rng=rng)
    with pytest.raises(ValueError, match="pool must be a non-empty uint8 array"):
        fuzz_frames(BASE, 3, word_width=16, rng=rng, pool=np.zeros(0, np.uint8))
    with pytest.raises(ValueError, match="count is -1"):
        run_fuzz(-1, lanes=1)
    with pytest.raises(ValueError, match="lanes must be 1, 2, 4, 8 or 16, not 3"):
        run_fuzz(3, lanes=3)


def test_code_space_frames_start_with_every_pattern():
    frames = code_space_frames(BASE, word_width=16)
    assert len(frames) == 4096
    _, errors = fuzz.expected_beats(BASE, frames, lanes=1, word_width=16)
    # Trimmed to its first code, a pattern fails only where that code is invalid: the
    # 88 unused suffixes of the base layout's area 7.
    assert sum(errors[2048:]) == 88


def fake_run_beats(behaviour):
    """A stand-in for ``run_beats``: ``behaviour(expected beats)`` gives what came out
    and how many words were taken. It elaborates the component, as the real one does: a
    block made and never built draws Amaranth's UnusedElaboratable warning later, in
    whichever test the garbage collector happens to run."""
    def run_beats(component, *, inputs, expected, **options):
        Fragment.get(component, None)
        output, taken = behaviour(inputs["i"], expected["o"])
        return {"output": {"o": output}, "input_cycles": {"i": list(range(taken))},
                "cycles": len(output)}
    return run_beats


def test_check_frames_counts_mismatches_and_hangs(monkeypatch):
    frames = fuzz_frames(BASE, 40, word_width=16, rng=np.random.default_rng(6),
                         mix={"good": 1})
    wanted, _ = fuzz.expected_beats(BASE, frames, lanes=1, word_width=16)

    def perfect(words, beats):
        return beats, len(words)
    monkeypatch.setattr(fuzz, "run_beats", fake_run_beats(perfect))
    report = check_frames(frames, lanes=1, seed=1, frames_per_run=15)
    assert (report["frames"], report["mismatches"], report["hangs"]) == (40, 0, 0)
    assert [run["frames"] for run in report["runs"]] == [15, 15, 10]
    assert [run["seed"] for run in report["runs"]] == [1, 2, 3]

    def wrong_symbol_in_frame_3(words, beats):
        ended, _ = split_frames(beats)
        if len(ended) > 3 and ended[3][0]["count"]:
            ended[3][0] = dict(ended[3][0], symbols=[ended[3][0]["symbols"][0] ^ 1])
        return [beat for frame in ended for beat in frame], len(words)
    monkeypatch.setattr(fuzz, "run_beats", fake_run_beats(wrong_symbol_in_frame_3))
    report = check_frames(frames[:10], lanes=1, seed=1)
    expected_bad = [3] if wanted[3][0]["count"] else []
    assert report["mismatched_frames"] == expected_bad
    assert report["mismatches"] == len(expected_bad) and report["hangs"] == 0

    calls = []

    def extra_beat_in_frame_2(words, beats):
        # The testbench stops at the expected beat count: frame 9 never ends in run 1.
        calls.append(len(words))
        if len(calls) > 1:
            return beats, len(words)
        ended, _ = split_frames(beats)
        ended[2] = [dict(ended[2][0], last=0)] + ended[2]
        return [beat for frame in ended for beat in frame][:len(beats)], len(words)
    monkeypatch.setattr(fuzz, "run_beats", fake_run_beats(extra_beat_in_frame_2))
    report = check_frames(frames[:10], lanes=1, seed=1)
    assert report["mismatched_frames"] == [2] and report["hangs"] == 0
    assert [run["resumed_at"] for run in report["runs"]] == [9, None]
    assert len(calls) == 2 and report["frames"] == 10

    runs = []

    def stuck_in_frame_5(words, beats):
        # The first run stops in frame 5: 5 frames out, part of the words taken.
        runs.append(len(words))
        if len(runs) == 1:
            ended, _ = split_frames(beats)
            return [beat for frame in ended[:5] for beat in frame], 3
        return beats, len(words)
    monkeypatch.setattr(fuzz, "run_beats", fake_run_beats(stuck_in_frame_5))
    report = check_frames(frames[:10], lanes=1, seed=1)
    assert (report["hangs"], report["hung_frames"], report["mismatches"]) == (1, [5], 0)
    assert [run["hung_on"] for run in report["runs"]] == [5, None]
    assert report["frames"] == 10 and report["unchecked"] == 0

    def always_stuck(words, beats):
        return [], 0
    monkeypatch.setattr(fuzz, "run_beats", fake_run_beats(always_stuck))
    report = check_frames(frames[:10], lanes=1, seed=1, max_hangs=3)
    assert report["hangs"] == 3 and report["hung_frames"] == [0, 1, 2]
    assert (report["frames"], report["unchecked"]) == (3, 7)
