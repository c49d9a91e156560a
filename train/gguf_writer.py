"""Minimal GGUF v3 writer and reader (ours; no gguf package).

Layout: magic "GGUF", u32 version (3), u64 tensor count, u64 metadata count, metadata KVs, tensor
infos (name, u32 n_dims, u64 dims innermost-first, u32 ggml type, u64 offset relative to the data
section), padding to `general.alignment` (32), tensor data (each tensor's offset aligned too).
A torch [out, in] matrix is stored row-major, which is dims {in, out} in GGUF order.
"""
import struct

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32

# metadata value types
T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STRING, T_ARRAY, T_U64, T_I64, T_F64 = range(13)
_SCALAR_FMT = {T_U8: "<B", T_I8: "<b", T_U16: "<H", T_I16: "<h", T_U32: "<I", T_I32: "<i",
               T_F32: "<f", T_BOOL: "<?", T_U64: "<Q", T_I64: "<q", T_F64: "<d"}

# ggml tensor types
GGML_F32, GGML_F16 = 0, 1
_NP_DTYPE = {GGML_F32: np.float32, GGML_F16: np.float16}


def _str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _value(vtype, v):
    if vtype == T_STRING:
        return _str(v)
    if vtype == T_ARRAY:
        etype, items = v
        out = [struct.pack("<IQ", etype, len(items))]
        if etype == T_STRING:
            out += [_str(x) for x in items]
        else:
            out.append(np.asarray(items, dtype=np.dtype(_SCALAR_FMT[etype][1:]).newbyteorder("<")).tobytes()
                       if etype != T_BOOL else bytes(int(bool(x)) for x in items))
        return b"".join(out)
    return struct.pack(_SCALAR_FMT[vtype], v)


class GGUFWriter:
    def __init__(self):
        self.kv = []        # (key, vtype, value)
        self.tensors = []   # (name, np.ndarray (C-contiguous), ggml type)

    def add(self, key, vtype, value):
        self.kv.append((key, vtype, value))

    def add_array(self, key, etype, items):
        self.kv.append((key, T_ARRAY, (etype, list(items))))

    def add_tensor(self, name, arr, ggml_type):
        arr = np.ascontiguousarray(np.asarray(arr, dtype=_NP_DTYPE[ggml_type]))
        self.tensors.append((name, arr, ggml_type))

    def write(self, path):
        head = [GGUF_MAGIC, struct.pack("<IQQ", GGUF_VERSION, len(self.tensors), len(self.kv))]
        for k, t, v in self.kv:
            head.append(_str(k) + struct.pack("<I", t) + _value(t, v))
        offset = 0
        offsets = []
        for name, arr, gt in self.tensors:
            offsets.append(offset)
            dims = list(reversed(arr.shape))  # innermost first
            head.append(_str(name) + struct.pack("<I", len(dims)) +
                        b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", gt, offset))
            offset += arr.nbytes
            offset += (-offset) % ALIGNMENT
        blob = b"".join(head)
        with open(path, "wb") as f:
            f.write(blob)
            f.write(b"\0" * ((-len(blob)) % ALIGNMENT))
            pos = 0
            for (name, arr, gt), off in zip(self.tensors, offsets):
                assert pos == off
                f.write(arr.tobytes())
                pos += arr.nbytes
                pad = (-pos) % ALIGNMENT
                f.write(b"\0" * pad)
                pos += pad


class GGUFCursor:
    """Reads a GGUF file's little-endian fields front to back from its bytes (or their first part)."""

    def __init__(self, data):
        self.data, self.p = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.p)
        self.p += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def rstr(self):
        n = self.take("<Q")
        s = self.data[self.p:self.p + n].decode("utf-8")
        self.p += n
        return s

    def rval(self, t, typed_arrays=False):
        """A metadata value of type t; arrays as lists, or as (etype, items) with typed_arrays."""
        if t == T_STRING:
            return self.rstr()
        if t == T_ARRAY:
            et, n = self.take("<I"), self.take("<Q")
            items = [self.rval(et, typed_arrays) for _ in range(n)]
            return (et, items) if typed_arrays else items
        return self.take(_SCALAR_FMT[t])

    def header(self):
        """(version, tensor count, metadata count), from the start."""
        assert self.data[:4] == GGUF_MAGIC
        self.p = 4
        return self.take("<I"), self.take("<Q"), self.take("<Q")

    def kv(self, n, typed_arrays=False):
        """[(key, vtype, value)] of the next n metadata entries."""
        out = []
        for _ in range(n):
            k = self.rstr()
            t = self.take("<I")
            out.append((k, t, self.rval(t, typed_arrays)))
        return out


def read_gguf(path):
    """Returns (metadata dict, {name: np.ndarray shaped torch-style [out, in]})."""
    data = open(path, "rb").read()
    c = GGUFCursor(data)
    ver, nt, nkv = c.header()
    assert ver == 3
    meta = {k: v for k, _, v in c.kv(nkv)}
    infos = []
    for _ in range(nt):
        name = c.rstr()
        nd = c.take("<I")
        dims = [c.take("<Q") for _ in range(nd)]
        gt, off = c.take("<I"), c.take("<Q")
        infos.append((name, dims, gt, off))
    align = meta.get("general.alignment", ALIGNMENT)
    base = c.p + (-c.p) % align
    tensors = {}
    for name, dims, gt, off in infos:
        n = int(np.prod(dims))
        dt = _NP_DTYPE[gt]
        arr = np.frombuffer(data, dtype=dt, count=n, offset=base + off)
        tensors[name] = arr.reshape(list(reversed(dims)))
    return meta, tensors
