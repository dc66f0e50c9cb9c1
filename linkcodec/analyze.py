"""``linkcodec analyze``: which codec fits these tensors?

For every shard (a ``.npy`` file, or one tensor of a ``.safetensors`` file) and over all
of them, each figure is *compressibility*, ``1 - compressed bits / raw bits`` (raw is 8
bits a value for e4m3, 16 for bf16):

- ``shannon``: the shard's order-0 entropy (the bound for any symbol-by-symbol code);
- ``huffman``: a length-limited Huffman code built from the shard itself (two passes:
  the baseline that single-stage Huffman avoids);
- ``huffman_fixed``: single-stage Huffman, the codebook built from the average PMF of all
  the *other* shards given (leave-one-out), or the ``--codebook`` file. With ``--scales``
  (each e4m3 shard's scale, 448 / amax) the average is taken of the other shards' values
  and cast at this shard's scale (``docs/huffman.md``, "Scale changes");
- ``qlc_base`` and ``qlc_optimal``: QLC with the base layout and with the optimiser's
  layout, ranks from the shard's PMF (e4m3 only);
- ``exponent_remap`` (bf16): ZipCCL's remap with the table from the tensor's sigma;
- ``exponent_huffman`` (bf16): DFloat11-style, sign+mantissa raw, exponent Huffman coded
  with the shard's own codebook (for bf16, ``huffman`` and ``huffman_fixed`` code the
  exponent plane too, so ``huffman`` equals ``exponent_huffman``);
- ``bf16_huffman_k8`` .. ``bf16_huffman_k12`` (bf16): the candidates for a bf16 Huffman
  codebook, single-stage: each value's top 8..12 bits Huffman-coded, the rest raw, with an
  escape (``docs/huffman.md``, "bf16 values"), the codebook built from all the *other*
  shards (leave-one-out), or the ``--codebook`` file for its own split;
- ``zstd`` (level 19) and ``zlib`` (level 9) on the raw bytes, as general-purpose
  baselines.

``kl_to_average`` is not a compressibility: it is the KL divergence in bits/symbol from
the shard's PMF to the average PMF the fixed codebook was built from; it predicts how
much ``huffman_fixed`` loses against ``huffman``. Totals weight each shard by its size.
"""

import json
import zlib

import numpy as np

from .tables import markdown_table

__all__ = ["METRICS", "analyze_shards", "add_arguments", "run"]

METRICS = ["shannon", "huffman", "huffman_fixed", "qlc_base", "qlc_optimal",
           "exponent_remap", "exponent_huffman", "bf16_huffman_k8", "bf16_huffman_k9",
           "bf16_huffman_k10", "bf16_huffman_k11", "bf16_huffman_k12", "zstd", "zlib"]

#: The splits (``coded_bits``) whose bf16 Huffman codebooks are measured.
BF16_CODED_BITS = (8, 9, 10, 11, 12)
RAW_BITS = {"e4m3": 8, "bf16": 16}


def _kl(p_counts, q):
    p = p_counts / p_counts.sum()
    mask = p > 0
    return float((p[mask] * np.log2(p[mask] / q[mask])).sum())


def _zstd_bits(raw):
    import zstandard

    return 8 * len(zstandard.ZstdCompressor(level=19).compress(raw))


def analyze_shards(shards, *, codebook=None, scales=None):
    """Per-shard figures (list of dicts) and the size-weighted totals (dict).

    ``scales``: one e4m3 scale per shard, for a leave-one-out codebook that follows it."""
    from .golden.formats import compressibility
    from .golden.huffman import (HuffmanCodebook, average_pmf, entropy_bits,
                                 per_shard_huffman_bits)
    from .golden.qlc import QlcCode, QlcLayout

    if not shards:
        raise ValueError("no tensors to analyze")
    if scales is not None:
        scales = list(scales)
        if codebook is not None:
            raise ValueError("--scales builds the leave-one-out codebooks; it does not "
                             "apply to a --codebook file")
        if len(scales) != len(shards):
            raise ValueError(f"{len(scales)} scales for {len(shards)} tensors: give one "
                             f"scale per tensor")
        bf16 = [f"{shard.file}:{shard.tensor}" for shard in shards if shard.format != "e4m3"]
        if bf16:
            raise ValueError(f"{bf16[0]} is bf16; scales follow e4m3 scaling")
    split_book = None
    if codebook is not None and not codebook.is_e4m3:
        split_book, codebook = codebook, None
        e4m3 = [f"{shard.file}:{shard.tensor}" for shard in shards if shard.format == "e4m3"]
        if e4m3:
            raise ValueError(f"codebook {split_book.id} codes {split_book.value_bits}-bit "
                             f"values; {e4m3[0]} is e4m3 (give an e4m3 codebook, or bf16 "
                             f"tensors)")
    planes = [shard.byte_plane for shard in shards]
    counts = [np.bincount(plane, minlength=256).astype(np.float64) for plane in planes]

    rows = []
    for index, shard in enumerate(shards):
        n = shard.symbols.size
        raw = RAW_BITS[shard.format]
        row = {"file": shard.file, "tensor": shard.tensor, "format": shard.format,
               "symbols": int(n)}
        bits = dict.fromkeys(METRICS)
        if n == 0:
            rows.append(dict(row, **bits, kl_to_average=None, _bits={}))
            continue
        plane, plane_counts = planes[index], counts[index]
        # Bits the sign+mantissa byte of a bf16 value costs on top of its exponent code.
        extra = 8 if shard.format == "bf16" else 0

        if shard.format == "e4m3":
            bits["shannon"] = entropy_bits(plane_counts)
        else:
            bits["shannon"] = entropy_bits(np.unique(shard.symbols, return_counts=True)[1]
                                       .astype(np.float64))
        bits["huffman"] = extra + per_shard_huffman_bits(plane)

        fixed, average = codebook, None
        others = [other for other in range(len(shards))
                  if other != index and counts[other].any()]
        if fixed is None and others:
            # The golden single-stage average: what `codebook build` would make of them.
            average, _, _ = average_pmf(
                [planes[other] for other in others],
                None if scales is None else [scales[other] for other in others],
                scale=None if scales is None else scales[index])
            fixed = HuffmanCodebook.from_pmf(average)
        if fixed is not None:
            bits["huffman_fixed"] = extra + float(fixed.lengths[plane].astype(np.int64).sum()) / n
            # The codebook's own model of the source: 2**-length (smoothed, never zero).
            model = average if average is not None else 2.0 ** -fixed.lengths.astype(float)
            model = np.where(model > 0, model, 2.0 ** -24)
            row["kl_to_average"] = _kl(plane_counts, model / model.sum())
        else:
            row["kl_to_average"] = None

        if shard.format == "e4m3":
            for name, layout in (("qlc_base", QlcLayout.base()), ("qlc_optimal", None)):
                code = QlcCode.from_pmf(plane_counts, layout=layout)
                bits[name] = float(code.length_of[plane].astype(np.int64).sum()) / n
        else:
            from .golden.exponent import encode, table_from_tensor_sigma
            import ml_dtypes

            values = shard.symbols.view(ml_dtypes.bfloat16)
            try:
                table = table_from_tensor_sigma(values)
                bits["exponent_remap"] = encode(shard.symbols, table).bits_per_value()
            except ValueError:
                bits["exponent_remap"] = None    # no finite spread to take a sigma from
            bits["exponent_huffman"] = bits["huffman"]
            bf16_others = [other for other in others if shards[other].format == "bf16"]
            for coded_bits in BF16_CODED_BITS:
                book = None
                if split_book is not None:
                    book = split_book if split_book.coded_bits == coded_bits else None
                elif bf16_others:
                    book = HuffmanCodebook.from_batches(
                        [shards[other].symbols for other in bf16_others], value_bits=16,
                        coded_bits=coded_bits)
                if book is not None:
                    top = shard.symbols >> (16 - coded_bits)
                    bits[f"bf16_huffman_k{coded_bits}"] = float(
                        book.value_lengths()[top].sum()) / n

        raw_bytes = shard.symbols.astype(shard.symbols.dtype.newbyteorder("<")).tobytes()
        bits["zstd"] = _zstd_bits(raw_bytes) / n
        bits["zlib"] = 8 * len(zlib.compress(raw_bytes, 9)) / n
        for name in METRICS:
            row[name] = None if bits[name] is None else compressibility(bits[name], raw)
        row["_bits"] = bits
        rows.append(row)

    total = {"symbols": int(sum(row["symbols"] for row in rows))}
    for name in METRICS + ["kl_to_average"]:
        weighted = [(row["symbols"], row[name]) for row in rows if row.get(name) is not None]
        weight = sum(size for size, _ in weighted)
        total[name] = (sum(size * value for size, value in weighted) / weight
                       if weight else None)
    return rows, total


def add_arguments(parser):
    parser.add_argument("files", nargs="+", metavar="FILE", help=".npy or .safetensors")
    parser.add_argument("--format", choices=["e4m3", "bf16"], default="e4m3",
                        help="how float arrays are cast (uint8 is always e4m3, uint16 bf16)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--plot", metavar="PNG", help="draw the PMF and code lengths")
    parser.add_argument("--codebook", metavar="JSON",
                        help="a codebook from `linkcodec codebook build` for huffman_fixed")
    parser.add_argument("--scales", type=float, nargs="+", metavar="S",
                        help="e4m3: each tensor's scale (448 / amax), one per tensor; the "
                             "leave-one-out codebook then follows the scale")


def _percent(value):
    return "-" if value is None else f"{100 * value:.2f}"


def format_table(rows, total):
    shown = [name for name in METRICS if any(row.get(name) is not None for row in rows)]
    head = ["tensor", "symbols"] + shown + ["kl_to_average"]
    cells = []
    for row in rows + [dict(total, tensor="**total**")]:
        kl = row.get("kl_to_average")
        cells.append([row["tensor"], str(row["symbols"])]
                     + [_percent(row.get(n)) for n in shown]
                     + ["-" if kl is None else f"{kl:.4f}"])
    return markdown_table(head, cells, align="l" * len(head))


def run(args):
    from .golden.huffman import HuffmanCodebook
    from .inputs import read_shards

    codebook = HuffmanCodebook.load(args.codebook) if args.codebook else None
    shards = read_shards(args.files, format=args.format)
    rows, total = analyze_shards(shards, codebook=codebook, scales=args.scales)
    if args.plot:
        from .plot import plot_analysis

        plot_analysis(shards, args.plot, codebook=codebook)
    public = [{key: value for key, value in row.items() if not key.startswith("_")}
              for row in rows]
    if args.json:
        print(json.dumps({"files": public, "total": total}, indent=2))
    else:
        print("compressibility in % (1 - compressed bits / raw bits); kl_to_average in "
              "bits/symbol")
        print(format_table(public, total))
        if args.plot:
            print(f"plot written to {args.plot}")
    return 0
