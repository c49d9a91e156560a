"""Export a pocketflash model as a Hugging Face checkpoint in the layout other engines load:
Qwen3ForCausalLM for the target, z-lab DFlashDraftModel / DFlash2DraftModel for the drafts
(config.json + safetensors written by safetensors_io.py; numpy only, no torch).

  export_hf.py MODEL.gguf -o DIR [--target TARGET.gguf] [--shard-bytes N]

Takes a GGUF with F16 / F32 tensors (the committed models/*.gguf, or what the recipe exports), so the
round trip GGUF -> HF -> `pocketflash convert` -> GGUF can be checked from committed files. A draft
needs --target (its config records the target's depth as num_target_layers). A target also gets
tokenizer.json / tokenizer_config.json rebuilt from its tokenizer.ggml.* keys (byte-level BPE,
Qwen2 pre-tokenizer). `export_checkpoint()` is the same writer for the recipe's own tensors.

Name and orientation mapping: the inverse of convert/hf_convert.c (llama.cpp's converter): torch
[out, in] = GGUF dims reversed, the same bytes. dflash.target_layers v (the target layer whose input
is tapped) is HF target_layer_ids v - 1. Not exported (pocketflash-only): the Dec head (dec.*) and
the draft-head ranking (dflash.head_tokens / head_vocab).
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_writer as G  # noqa: E402
import safetensors_io as S  # noqa: E402

QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")

_LAYER = {"attn_norm.weight": "input_layernorm.weight", "attn_q.weight": "self_attn.q_proj.weight",
          "attn_k.weight": "self_attn.k_proj.weight", "attn_v.weight": "self_attn.v_proj.weight",
          "attn_output.weight": "self_attn.o_proj.weight", "attn_q_norm.weight": "self_attn.q_norm.weight",
          "attn_k_norm.weight": "self_attn.k_norm.weight", "ffn_norm.weight": "post_attention_layernorm.weight",
          "ffn_gate.weight": "mlp.gate_proj.weight", "ffn_up.weight": "mlp.up_proj.weight",
          "ffn_down.weight": "mlp.down_proj.weight",
          "attn_conv_base": "attention_conv.base_kernel", "attn_conv_proj.weight": "attention_conv.kernel_projection.weight",
          "ffn_conv_base": "mlp_conv.base_kernel", "ffn_conv_proj.weight": "mlp_conv.kernel_projection.weight"}
_TARGET_TOP = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
               "output.weight": "lm_head.weight"}
_DRAFT_TOP = {"fc.weight": "fc.weight", "enc.output_norm.weight": "hidden_norm.weight", "output_norm.weight": "norm.weight",
              "selector_hidden.weight": "candidate_selector.hidden_projection.weight",
              "selector_predecessor.weight": "candidate_selector.predecessor_codebook",
              "selector_successor.weight": "candidate_selector.successor_codebook",
              "token_embd.weight": "embed_tokens.weight", "output.weight": "lm_head.weight"}


def hf_name(gguf_name, draft):
    if gguf_name.startswith("blk."):
        _, n, rest = gguf_name.split(".", 2)
        if rest in _LAYER:
            return ("" if draft else "model.") + f"layers.{n}.{_LAYER[rest]}"
        return None
    return (_DRAFT_TOP if draft else _TARGET_TOP).get(gguf_name)


def read_model(path):
    G._NP_DTYPE.setdefault(27, np.int64)  # I64 (d2t)
    meta, tensors = G.read_gguf(path)
    return meta, tensors


def shape_config(meta, p):
    g = lambda k, d=None: meta.get(f"{p}.{k}", d)  # noqa: E731
    H, nh = g("embedding_length"), g("attention.head_count")
    return {"hidden_size": H, "intermediate_size": g("feed_forward_length"), "num_hidden_layers": g("block_count"),
            "num_attention_heads": nh, "num_key_value_heads": g("attention.head_count_kv", nh),
            "head_dim": g("attention.key_length", H // nh), "max_position_embeddings": g("context_length", 40960),
            "rms_norm_eps": float(str(np.float32(g("attention.layer_norm_rms_epsilon", 1e-6)))),
            "rope_theta": float(str(np.float32(g("rope.freq_base", 10000.0)))), "hidden_act": "silu",
            "attention_bias": False, "model_type": "qwen3"}


def tokenizer_files(meta):
    """tokenizer.json and tokenizer_config.json (dicts) from a GGUF's tokenizer.ggml.* keys."""
    if meta.get("tokenizer.ggml.model") != "gpt2" or meta.get("tokenizer.ggml.pre") != "qwen2":
        raise SystemExit("export_hf: the tokenizer is not byte-level BPE with the qwen2 pre-tokenizer")
    toks, types = meta["tokenizer.ggml.tokens"], meta.get("tokenizer.ggml.token_type")
    types = types or [1] * len(toks)
    vocab, added = {}, []
    for i, (t, ty) in enumerate(zip(toks, types)):
        if ty == 5:  # unused padding: a gap the import refills
            continue
        if ty in (3, 4):
            added.append({"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": ty == 3})
        else:
            vocab[t] = i
    tj = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
          "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
              {"type": "Split", "pattern": {"Regex": QWEN2_REGEX}, "behavior": "Isolated", "invert": False},
              {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
          "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
          "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
          "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                    "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                    "vocab": vocab, "merges": list(meta.get("tokenizer.ggml.merges", []))}}
    eos, pad = meta.get("tokenizer.ggml.eos_token_id"), meta.get("tokenizer.ggml.padding_token_id")
    tc = {"tokenizer_class": "Qwen2Tokenizer", "add_bos_token": False, "bos_token": None,
          "eos_token": toks[eos] if eos is not None else None, "pad_token": toks[pad] if pad is not None else None,
          "model_max_length": meta.get("qwen3.context_length", 40960)}
    if "tokenizer.chat_template" in meta:
        tc["chat_template"] = meta["tokenizer.chat_template"]
    return tj, tc


def export_checkpoint(out_dir, config, tensors, tokenizer=None, shard_bytes=0):
    """Write config.json, the safetensors (sharded when shard_bytes > 0) and, for a target, the
    tokenizer files (tokenizer = (tokenizer.json dict, tokenizer_config.json dict))."""
    os.makedirs(out_dir, exist_ok=True)
    meta = {"format": "pt", "producer": "pocketflash train/export_hf.py"}
    if shard_bytes > 0:
        S.write_sharded(out_dir, tensors, shard_bytes, meta)
    else:
        S.write(os.path.join(out_dir, "model.safetensors"), tensors, meta)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2, ensure_ascii=False)
    if tokenizer:
        for name, obj in zip(("tokenizer.json", "tokenizer_config.json"), tokenizer):
            with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
                json.dump(obj, f, ensure_ascii=False)


def from_gguf(path, target=None):
    """(config, {hf name: array}, tokenizer files or None, [notes]) of a pocketflash GGUF."""
    meta, T = read_model(path)
    arch = meta.get("general.architecture")
    if arch not in ("qwen3", "dflash"):
        raise SystemExit(f"export_hf: {path}: general.architecture {arch!r} is neither qwen3 nor dflash")
    draft = arch == "dflash"
    cfg = shape_config(meta, arch)
    if "general.name" in meta:
        cfg["_name_or_path"] = meta["general.name"]
    notes, out = [], {}
    for name, a in T.items():
        if a.dtype not in (np.float16, np.float32) and name != "d2t":
            raise SystemExit(f"export_hf: {path}: tensor {name}: only F16 / F32 tensors are exported")
        hn = hf_name(name, draft)
        if name == "d2t":  # absolute ids -> HF offsets (target id = i + d2t[i])
            out["d2t"] = (a.astype(np.int64) - np.arange(a.shape[0], dtype=np.int64))
        elif hn is None:
            notes.append(f"not exported (pocketflash-only): tensor {name}")
        else:
            out[hn] = a
    dtype = "float16" if any(a.dtype == np.float16 for a in T.values()) else "float32"
    cfg["torch_dtype"] = dtype
    vocab = len(meta["tokenizer.ggml.tokens"])
    cfg["vocab_size"] = vocab
    if not draft:
        cfg["architectures"] = ["Qwen3ForCausalLM"]
        cfg["tie_word_embeddings"] = "output.weight" not in T
        for k, hk in (("tokenizer.ggml.eos_token_id", "eos_token_id"), ("tokenizer.ggml.bos_token_id", "bos_token_id")):
            if k in meta:
                cfg[hk] = meta[k]
        return cfg, out, tokenizer_files(meta), notes
    v2 = "selector_hidden.weight" in T
    cfg["architectures"] = ["DFlash2DraftModel" if v2 else "DFlashDraftModel"]
    cfg["tie_word_embeddings"] = False
    taps = [int(v) - 1 for v in meta["dflash.target_layers"]]
    n_target = None
    if target:
        n_target = _target_layers(target)
        cfg["num_target_layers"] = n_target
        cfg["target_hidden_size"] = _target_hidden(target)
    for i, t in enumerate(taps):
        if n_target is not None and t == n_target - 1:
            notes.append(f"warning: target_layer_ids[{i}] = {t} is the target's last layer: llama.cpp refuses the draft, and "
                         f"HF's hidden_states[{t + 1}] is after the final norm (pocketflash taps the residual before it)")
    dc = {"block_size": meta["dflash.block_size"], "target_layer_ids": taps}
    if "tokenizer.ggml.mask_token_id" in meta:
        dc["mask_token_id"] = meta["tokenizer.ggml.mask_token_id"]
    if v2:
        for k in ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k"):
            dc[k] = meta[f"dflash.{k}"]
    cfg["dflash_config"] = dc
    cfg["block_size"] = dc["block_size"]
    cfg["is_causal"] = bool(meta.get("dflash.attention.causal", False))
    L = cfg["num_hidden_layers"]
    win = meta.get("dflash.attention.sliding_window", 0)
    pat = meta.get("dflash.attention.sliding_window_pattern")
    if win:
        slide = [bool(x) for x in pat] if isinstance(pat, list) else [True] * L
        if not isinstance(pat, list) and pat is not None:  # integer period n: layer l slides iff l % n < n - 1
            slide = [pat == 0 or l % pat < pat - 1 for l in range(L)]
        cfg["layer_types"] = ["sliding_attention" if s else "full_attention" for s in slide]
        cfg["sliding_window"] = win
    else:
        cfg["layer_types"] = ["full_attention"] * L
        cfg["sliding_window"] = None
    for k, hk in (("dflash.logit_scale", "logit_scale"), ("dflash.final_logit_softcapping", "final_logit_softcapping"),
                  ("dflash.embedding_scale", "embedding_scale")):
        if k in meta:
            cfg[hk] = meta[k]
    for k in ("dflash.head_tokens", "dflash.head_vocab", "dflash.dec.positions"):
        if k in meta:
            notes.append(f"not exported (pocketflash-only): key {k}")
    return cfg, out, None, notes


def _meta_only(path):
    """Metadata of a GGUF without reading its tensors."""
    with open(path, "rb") as f:
        c = G.GGUFCursor(f.read(64 << 20))
    _, _, nkv = c.header()
    return {k: v for k, _, v in c.kv(nkv)}


def _target_layers(path):
    return _meta_only(path)["qwen3.block_count"]


def _target_hidden(path):
    return _meta_only(path)["qwen3.embedding_length"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gguf")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--target", help="the target's GGUF (drafts)")
    ap.add_argument("--shard-bytes", type=int, default=0, help="write model-*-of-*.safetensors shards of at most N bytes")
    a = ap.parse_args()
    cfg, tensors, tok, notes = from_gguf(a.gguf, a.target)
    if cfg["architectures"][0] != "Qwen3ForCausalLM" and not a.target:
        raise SystemExit("export_hf: a draft needs --target TARGET.gguf")
    export_checkpoint(a.out, cfg, tensors, tok, a.shard_bytes)
    for n in notes:
        print(f"export_hf: {n}", file=sys.stderr)
    print(f"{a.out}: {cfg['architectures'][0]}, {len(tensors)} tensors")


if __name__ == "__main__":
    main()
