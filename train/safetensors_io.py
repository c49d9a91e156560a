"""Minimal safetensors writer and reader (ours; numpy only, no safetensors package).

Layout: u64 little-endian header length N, N bytes of JSON (padded with spaces to a multiple of 8,
as the reference implementation pads), then the data section. The JSON maps each tensor name to
{"dtype", "shape" (torch order), "data_offsets": [begin, end]} relative to the data section, plus
"__metadata__" (strings). Tensors tile the data section in order: no gap, no overlap.
"""
import json
import struct

import numpy as np

_DTYPES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.int64): "I64",
           np.dtype(np.int32): "I32", np.dtype(np.uint16): "BF16"}
_NP = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32, "BF16": np.uint16}


def write(path, tensors, metadata=None, bf16=()):
    """tensors: {name: np.ndarray} in the order to store them. Arrays of dtype uint16 are written as
    BF16 only when their name is in `bf16` (bits already bf16); anything else must be F32/F16/I64/I32."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        dt = "BF16" if name in bf16 else _DTYPES.get(a.dtype)
        if dt is None or (a.dtype == np.uint16 and name not in bf16):
            raise ValueError(f"{name}: dtype {a.dtype} cannot be stored")
        b = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    h += b" " * ((-len(h)) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    import os
    os.replace(path + ".tmp", path)


def read(path):
    """{name: np.ndarray} (BF16 as uint16 bits) and the __metadata__ dict."""
    data = open(path, "rb").read()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        a = np.frombuffer(data, dtype=np.dtype(_NP[e["dtype"]]).newbyteorder("<"), count=(end - b) // np.dtype(
            _NP[e["dtype"]]).itemsize, offset=base + b)
        out[name] = a.reshape(e["shape"])
    return out, meta


def write_sharded(folder, tensors, max_bytes, metadata=None):
    """model-0000i-of-0000n.safetensors of at most max_bytes each (a tensor is never split) and
    model.safetensors.index.json mapping every tensor to its shard."""
    import os
    shards, cur, size = [], {}, 0
    for name, a in tensors.items():
        if cur and size + a.nbytes > max_bytes:
            shards.append(cur)
            cur, size = {}, 0
        cur[name] = a
        size += a.nbytes
    if cur:
        shards.append(cur)
    weight_map, total = {}, 0
    for i, sh in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        write(os.path.join(folder, fname), sh, metadata)
        for name, a in sh.items():
            weight_map[name] = fname
            total += a.nbytes
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
