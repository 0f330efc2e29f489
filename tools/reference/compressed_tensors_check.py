#!/usr/bin/env python3
"""An independent check of a compressed-tensors export (`sdw-cli export
compressed-tensors`, `sdw-cli prune --export compressed-tensors`), written from
the compressed-tensors source (0.12.2: sparse_compressors/sparse_bitmask.py
bitmask_decompress, sparse_24_bitmask.py sparse24_bitmask_decompress,
utils/helpers.py unpack_bitmasks: numpy.unpackbits(axis=-1, count=cols,
bitorder="little")), with numpy only: the safetensors files are parsed here,
not with a library of this project.

    python3 tools/reference/compressed_tensors_check.py PRUNED_DENSE_DIR EXPORT_DIR

Decompresses every compressed projection of EXPORT_DIR and compares it with
the dense pruned weights of PRUNED_DENSE_DIR bit for bit; checks the config
entries, the tensor shapes and dtypes the format prescribes, row_offsets, and
that every other tensor was copied unchanged. Exit 0 when all agree.
"""
import json
import os
import struct
import sys

import numpy as np

DTYPES = {"BF16": np.uint16, "F16": np.uint16, "F32": np.uint32, "I64": np.int64, "U8": np.uint8, "I32": np.int32}


def load(path):
    """name -> (dtype string, shape, raw numpy array) of one safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        arr = np.frombuffer(data[base + a:base + b], dtype=DTYPES[e["dtype"]]).reshape(e["shape"])
        out[name] = (e["dtype"], e["shape"], arr)
    return out


def main():
    dense_dir, ct_dir = sys.argv[1], sys.argv[2]
    dense = load(os.path.join(dense_dir, "model.safetensors"))
    ct = load(os.path.join(ct_dir, "model.safetensors"))
    cfg = json.load(open(os.path.join(ct_dir, "config.json")))
    q = cfg["quantization_config"]
    sc = q["sparsity_config"]
    assert q["quant_method"] == "compressed-tensors", q
    fmt = sc["format"]
    assert fmt in ("sparse-bitmask", "sparse-24-bitmask"), fmt
    print(f"format {fmt}, structure {sc.get('sparsity_structure')}, global_sparsity {sc.get('global_sparsity')}, "
          f"version {q.get('version')}")
    checked = copied = 0
    zero_bits = 0
    for name, (dt, shape, arr) in dense.items():
        prefix = name[:-len(".weight")] if name.endswith(".weight") else None
        if prefix is None or prefix + ".compressed" not in ct:
            assert name in ct, f"{name} missing from the export"
            cdt, cshape, carr = ct[name]
            assert (cdt, list(cshape)) == (dt, list(shape)) and np.array_equal(carr, arr), f"{name} changed"
            copied += 1
            continue
        assert name not in ct, f"{name} is stored both dense and compressed"
        rows, cols = shape
        sdt, sshape, sarr = ct[prefix + ".shape"]
        assert sdt == "I64" and list(sshape) == ([2, 1] if fmt == "sparse-24-bitmask" else [2]), (prefix, sshape)
        assert sarr.flatten().tolist() == [rows, cols], (prefix, sarr)
        bdt, bshape, bits = ct[prefix + ".bitmask"]
        assert bdt == "U8" and list(bshape) == [rows, (cols + 7) // 8], (prefix, bshape)
        vdt, vshape, vals = ct[prefix + ".compressed"]
        assert vdt == dt, (prefix, vdt, dt)
        mask = np.unpackbits(bits, axis=-1, count=cols, bitorder="little").reshape(rows, cols).astype(bool)
        if fmt == "sparse-24-bitmask":
            assert list(vshape) == [rows, cols // 2], (prefix, vshape)
            assert (mask.reshape(rows, cols // 4, 4).sum(-1) == 2).all(), f"{prefix}: not 2 of every 4"
        else:
            ro = ct[prefix + ".row_offsets"][2]
            counts = mask.sum(-1)
            assert np.array_equal(ro, np.cumsum(counts) - counts), f"{prefix}: row_offsets"
            assert list(vshape) == [int(mask.sum())], (prefix, vshape)
        out = np.zeros((rows, cols), dtype=arr.dtype)
        out[mask] = vals.flatten()
        # The dense pruned weights: zeros are +0 or -0 (both compare equal to 0 in `tensor != 0`).
        sign = 0x8000 if arr.dtype == np.uint16 else 0x80000000
        ref = np.where((arr & ~np.array(sign, dtype=arr.dtype)) == 0, np.zeros_like(arr), arr)
        zero_bits += int(((arr != ref)).sum())
        assert np.array_equal(out, ref), f"{prefix}: decompressed weights differ from the dense pruned ones"
        checked += 1
    print(f"{checked} compressed projections decompress bit for bit to the dense pruned weights "
          f"({zero_bits} negative zeros read as +0); {copied} other tensors copied unchanged")


if __name__ == "__main__":
    main()
