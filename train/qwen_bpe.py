"""Qwen2/Qwen3 byte-level BPE encoder (our own implementation; the C tokenizer follows the same spec).

Encoding, exactly:
  1. split special tokens out first (exact string match of the control-token texts; the longest
     special token wins when two start at the same place, scanning left to right);
  2. pre-tokenize each remaining span with the Qwen2 regex (PRETOKENIZE_RE below);
  3. map each piece's UTF-8 bytes through the GPT-2 byte-to-unicode table;
  4. apply merges by lowest rank: repeatedly merge the leftmost adjacent pair with the lowest rank
     until no adjacent pair has a rank; then look each symbol up in the vocabulary.
No Unicode normalization is applied here (the corpus is NFC-normalized when it is built).
"""
import json

import regex

PRETOKENIZE_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                       r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
PRETOKENIZE_RE = regex.compile(PRETOKENIZE_PATTERN)


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode character map."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_ENCODER = bytes_to_unicode()
BYTE_DECODER = {c: b for b, c in BYTE_ENCODER.items()}


class QwenBPE:
    def __init__(self, tokens, merges, specials):
        """tokens: list of token strings (index = id), byte-level unicode form.
        merges: list of (left, right) string pairs in rank order.
        specials: list of special-token strings (must be in tokens)."""
        self.tokens = list(tokens)
        self.token_to_id = {t: i for i, t in enumerate(self.tokens)}
        self.merges = [tuple(m) for m in merges]
        self.ranks = {m: i for i, m in enumerate(self.merges)}
        self.specials = list(specials)
        self.special_ids = {s: self.token_to_id[s] for s in self.specials}
        self.cache = {}
        if self.specials:
            alt = "|".join(regex.escape(s) for s in sorted(self.specials, key=len, reverse=True))
            self.special_re = regex.compile("(" + alt + ")")
        else:
            self.special_re = None

    # -- construction helpers -------------------------------------------------------------
    @classmethod
    def from_tokenizer_json(cls, path):
        t = json.load(open(path, encoding="utf-8"))
        vocab = t["model"]["vocab"]
        n = max(vocab.values()) + 1
        added = t["added_tokens"]
        n = max(n, max(a["id"] for a in added) + 1)
        tokens = [None] * n
        for s, i in vocab.items():
            tokens[i] = s
        for a in added:
            tokens[a["id"]] = a["content"]
        merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in t["model"]["merges"]]
        specials = [a["content"] for a in sorted(added, key=lambda a: a["id"])]
        return cls(tokens, merges, specials)

    # -- encoding -------------------------------------------------------------------------
    def bpe(self, piece):
        """piece: byte-level unicode string. Returns list of symbol strings."""
        hit = self.cache.get(piece)
        if hit is not None:
            return hit
        syms = list(piece)
        ranks = self.ranks
        while len(syms) > 1:
            best = None
            best_i = -1
            for i in range(len(syms) - 1):
                r = ranks.get((syms[i], syms[i + 1]))
                if r is not None and (best is None or r < best):
                    best = r
                    best_i = i
            if best is None:
                break
            syms[best_i:best_i + 2] = [syms[best_i] + syms[best_i + 1]]
        if len(self.cache) < 2_000_000:
            self.cache[piece] = syms
        return syms

    def encode_ordinary(self, text):
        ids = []
        t2i = self.token_to_id
        for piece in PRETOKENIZE_RE.findall(text):
            u = "".join(BYTE_ENCODER[b] for b in piece.encode("utf-8"))
            for s in self.bpe(u):
                ids.append(t2i[s])
        return ids

    def encode(self, text, allow_special=True):
        if not allow_special or self.special_re is None:
            return self.encode_ordinary(text)
        ids = []
        for k, part in enumerate(self.special_re.split(text)):
            if k % 2 == 1:
                ids.append(self.special_ids[part])
            elif part:
                ids.extend(self.encode_ordinary(part))
        return ids

    def decode_bytes(self, ids):
        out = bytearray()
        for i in ids:
            t = self.tokens[i]
            if t in self.special_ids:
                out += t.encode("utf-8")
            else:
                out += bytes(BYTE_DECODER[c] for c in t)
        return bytes(out)

    def decode(self, ids):
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    # -- persistence (pruned vocab) -------------------------------------------------------
    def save(self, path):
        json.dump({"tokens": self.tokens, "merges": [" ".join(m) for m in self.merges],
                   "specials": self.specials}, open(path, "w", encoding="utf-8"), ensure_ascii=False)

    @classmethod
    def load(cls, path):
        d = json.load(open(path, encoding="utf-8"))
        return cls(d["tokens"], [tuple(m.split(" ", 1)) for m in d["merges"]], d["specials"])


def read_golden(inp_path, out_path):
    raw = open(inp_path, encoding="utf-8").read()
    if raw.endswith("\n__ggml_vocab_test__\n"):
        raw = raw[: -len("\n__ggml_vocab_test__\n")]
    inp = raw.split("\n__ggml_vocab_test__\n")
    outs = open(out_path, encoding="utf-8").read().split("\n")[: len(inp)]
    assert len(outs) == len(inp), (len(outs), len(inp))
    return inp, outs


if __name__ == "__main__":
    import sys
    tok = QwenBPE.from_tokenizer_json(sys.argv[1])
    fx = "/work/shared/fixtures/qwen-tokenizer/ggml-vocab-qwen2.gguf"
    inp, outs = read_golden(fx + ".inp", fx + ".out")
    bad = 0
    for i, s in enumerate(inp):
        exp = [int(x) for x in outs[i].split()]
        got = tok.encode(s, allow_special=False)
        if got != exp:
            bad += 1
            print("MISMATCH", repr(s), exp, got)
    print(f"{len(inp) - bad}/{len(inp)} golden strings match")
