#!/usr/bin/env python3
"""Writes the FP8/FP6/FP4 conversion vectors that tests/minifloat.rs checks dlmd against.

The reference is the `ml_dtypes` package (pinned in scripts/requirements-vectors.txt). For each
format it writes, under tests/data/minifloat/:

  NAME.decode  every encoding's value: one little-endian f32 per code, codes 0 .. 2**bits - 1
  NAME.encode  conversions from f32: records of 5 bytes, the input's bits (u32 little-endian)
               followed by the encoding ml_dtypes gives

The encode inputs are every decoded value, every midpoint between neighbouring values and the
floats just beside each midpoint (the ties and near-ties rounding must get right), special
values, and 120 000 random floats: a third uniform over all bit patterns, a third spread over
the format's exponent range, a third within a few ulps of the format's values.

Usage: python3 scripts/minifloat_vectors.py [OUTPUT_DIR]
"""

import pathlib
import sys

import ml_dtypes
import numpy as np

FORMATS = {
    "f8e4m3fn": (ml_dtypes.float8_e4m3fn, 8),
    "f8e5m2": (ml_dtypes.float8_e5m2, 8),
    "f8e8m0fnu": (ml_dtypes.float8_e8m0fnu, 8),
    "f6e2m3fn": (ml_dtypes.float6_e2m3fn, 6),
    "f6e3m2fn": (ml_dtypes.float6_e3m2fn, 6),
    "f4e2m1fn": (ml_dtypes.float4_e2m1fn, 4),
}
RANDOM_PER_FORMAT = 120_000
SEED = 20261122


def f32_bits(values):
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def inputs_for(dtype, bits, rng):
    codes = np.arange(2**bits, dtype=np.uint8)
    values = codes.view(dtype).astype(np.float32)
    finite = np.unique(values[np.isfinite(values)])
    mids = (finite[:-1].astype(np.float64) + finite[1:].astype(np.float64)) / 2
    mids = mids.astype(np.float32)
    near = np.concatenate([np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf))])
    beyond = np.array([finite.max() * 2, finite.min() * 2, finite.max() * 1.0625, finite.min() * 1.0625], np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1e-38, 3.4e38, -3.4e38], np.float32)
    special_bits = np.array([0x7F800001, 0xFFC00001, 0x7FFFFFFF, 0x00400000, 0x00400001, 0x007FFFFF], np.uint32)
    fixed = np.concatenate([f32_bits(values), f32_bits(mids), f32_bits(near), f32_bits(beyond), f32_bits(special), special_bits])

    third = RANDOM_PER_FORMAT // 3
    uniform = rng.integers(0, 2**32, size=third, dtype=np.uint64).astype(np.uint32)
    nonzero = np.abs(finite[finite != 0])
    lo, hi = np.log2(nonzero.min()) - 4, np.log2(nonzero.max()) + 3
    exps = rng.uniform(lo, hi, size=third)
    signs = rng.choice([-1.0, 1.0], size=third)
    spread = f32_bits((signs * np.exp2(exps)).astype(np.float32))
    anchors = f32_bits(rng.choice(finite, size=RANDOM_PER_FORMAT - 2 * third)).astype(np.int64)
    jitter = rng.integers(-4, 5, size=anchors.size)
    close = (anchors + jitter).clip(0, 2**32 - 1).astype(np.uint32)
    return np.concatenate([fixed, uniform, spread, close]).astype(np.uint32)


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent / "tests/data/minifloat")
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    for name, (dtype, bits) in FORMATS.items():
        codes = np.arange(2**bits, dtype=np.uint8)
        decoded = codes.view(dtype).astype(np.float32)
        (out / f"{name}.decode").write_bytes(decoded.astype("<f4").tobytes())

        inputs = inputs_for(dtype, bits, rng)
        encoded = inputs.view(np.float32).astype(dtype).view(np.uint8)
        records = np.zeros(inputs.size, dtype=[("input", "<u4"), ("code", "u1")])
        records["input"] = inputs
        records["code"] = encoded
        (out / f"{name}.encode").write_bytes(records.tobytes())
        print(f"{name}: {2**bits} decodes, {inputs.size} encodes")
    print(f"ml_dtypes {ml_dtypes.__version__}, numpy {np.__version__}")


if __name__ == "__main__":
    # Overflow and NaN in the casts are the point of the edge cases: keep numpy quiet about them.
    with np.errstate(all="ignore"):
        main()
