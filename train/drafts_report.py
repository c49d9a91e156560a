"""Markdown tables for DRAFTS.md from the pipeline's outputs under work/drafts/:
training summaries (v1/, v2/ final.json + run_config.json), offline acceptance (accept_v*.json) and the
C-engine benchmarks (bench/<draft>-B<B>.json from bench_drafts.sh)."""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
W = os.path.join(HERE, "work", "drafts")
TYPES = ["math", "code", "extraction", "summary", "rewrite", "qa", "chat", "long"]   # long: targets that read 2,048 tokens


def load(p):
    p = os.path.join(W, p)
    return json.load(open(p)) if os.path.exists(p) else None


def main():
    print("### Training\n")
    print("| draft | params | steps | supervised block rows | wall | final CE (EMA) | teacher-forced tau@16 (EMA) | selector CE / acc / coverage |")
    print("|---|---|---|---|---|---|---|---|")
    names = {"1": "DFlash base (v1)", "1b": "DFlash = base + continued (v1b)", "2": "DFlash2 = base + fine-tune (v2)"}
    for v in ("1", "1b", "2"):
        f, rc = load(f"v{v}/final.json"), load(f"v{v}/run_config.json")
        if not f:
            continue
        e = f["final_ema"]
        sel = f"{e['sel_ce']:.3f} / {e['sel_acc']:.3f} / {e['cover']:.3f}" if "sel_ce" in e else "-"
        print(f"| {names[v]} | {f.get('params', 3000832) / 1e6:.2f}M | {f['steps']} | {f['rows']:,} | {f['wall_s'] / 60:.1f} min | "
              f"{e['ce']:.3f} | {e['tau']:.2f} | {sel} |")
    first = True
    for v in ("1b", "2"):
        a = load(f"accept_v{v}.json")
        if not a:
            continue
        if first:
            first = False
            print("\n### Offline acceptance (held-out eval prompts, teacher-forced on the target's greedy responses)\n")
            print("| draft | B | " + " | ".join(TYPES) + " | all |")
            print("|---|---|" + "---|" * (len(TYPES) + 1))
        for B, r in sorted(a.items(), key=lambda x: int(x[0])):
            print(f"| DFlash{'2' if v == '2' else ''} | {B} | " + " | ".join(f"{r.get(t, float('nan')):.2f}" for t in TYPES) +
                  f" | {r['all']:.2f} |")
    rows = []
    for d in ("dflash", "dflash2"):
        for B in (4, 8, 16):
            b = load(f"bench/{d}-B{B}.json")
            if b:
                rows.append((d, B, b))
    if rows:
        print("\n### C engine, greedy (`pocketflash bench`, tau = tokens per round incl. the bonus)\n")
        print("| draft | B | " + " | ".join(TYPES) + " | overall tau | speedup (geomean) | identical |")
        print("|---|---|" + "---|" * (len(TYPES) + 3))
        for d, B, b in rows:
            t = b["tasks"]
            print(f"| {d} | {B} | " + " | ".join(f"{t[x]['tau']:.2f}" if x in t else "-" for x in TYPES) +
                  f" | {b['overall']['tau']:.2f} | {b['overall']['speedup_geomean']:.2f}x | "
                  f"{'yes' if b['overall']['identical'] else 'NO'} |")
        print("\nspeedup per task (same runs):\n")
        print("| draft | B | " + " | ".join(TYPES) + " |")
        print("|---|---|" + "---|" * len(TYPES))
        for d, B, b in rows:
            t = b["tasks"]
            print(f"| {d} | {B} | " + " | ".join(f"{t[x]['speedup']:.2f}x" if x in t else "-" for x in TYPES) + " |")


if __name__ == "__main__":
    main()
