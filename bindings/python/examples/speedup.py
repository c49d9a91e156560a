"""Speculative vs plain decode tok/s per task type on eval/tasks (4 prompts each, greedy chat, 48 tokens):
    python3 bindings/python/examples/speedup.py [TARGET DRAFT]"""
import glob, json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import pocketflash as pf

target, draft = sys.argv[1:3] if len(sys.argv) > 2 else ("models/pf-target-f16.gguf", "models/pf-draft-dflash2.gguf")
with pf.Model(target) as m, m.load_draft(draft) as d, m.session(threads=2) as s:
    for path in sorted(glob.glob("eval/tasks/*.jsonl")):
        prompts = [r["prompt"] for r in map(json.loads, open(path, encoding="utf-8")) if "prompt" in r][:4]
        if not prompts: continue
        rate = {}
        for name, kw in (("plain", {"strategy": "plain"}), ("spec", {"draft": d})):
            runs = [(s.chat([{"role": "user", "content": p}], max_tokens=48, **kw), s.stats) for p in prompts]
            rate[name] = sum(st.n_gen - 1 for _, st in runs) / sum(st.decode_s for _, st in runs)
        print("%-11s %6.1f -> %6.1f tok/s  %.2fx  tau %.2f" % (os.path.basename(path)[:-6], rate["plain"],
              rate["spec"], rate["spec"] / rate["plain"], sum(st.tau for _, st in runs) / len(runs)))
