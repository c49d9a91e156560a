"""Rank the target's tokens by how often the drafts are trained to predict them (the response ids
of the target's own generations that make_drafts.sh trains on, work/drafts/gen_*.jsonl) and pick
the draft-head vocabulary size: the fewest top tokens that cover COVER of those predictions.
Writes the ranked ids (every token seen, most frequent first; ties by id) to OUT and prints N.
`pocketflash draft-head` stores both in a draft.

    head_tokens.py OUT [COVER=0.995]"""
import glob
import json
import os
import sys

WORK = os.environ.get("PF_DRAFT_WORK") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "work", "drafts")


def main():
    out = sys.argv[1]
    cover = float(sys.argv[2]) if len(sys.argv) > 2 else 0.995
    counts = {}
    total = 0
    files = sorted(glob.glob(os.path.join(WORK, "gen_greedy_*.jsonl")) + glob.glob(os.path.join(WORK, "gen_sampled_*.jsonl")))
    if not files:
        sys.exit(f"no generations under {WORK} (make_drafts.sh writes them)")
    for path in files:
        with open(path) as f:
            for line in f:
                for t in json.loads(line)["response_ids"]:
                    counts[t] = counts.get(t, 0) + 1
                    total += 1
    order = sorted(counts, key=lambda i: (-counts[i], i))
    acc, n = 0, len(order)
    for k, i in enumerate(order):
        acc += counts[i]
        if acc >= cover * total:
            n = k + 1
            break
    with open(out, "w") as f:
        f.write("\n".join(str(i) for i in order) + "\n")
    print(f"{len(order)} tokens ranked from {total} predictions in {len(files)} files; the top {n} cover "
          f"{sum(counts[i] for i in order[:n]) / total:.4f}", file=sys.stderr)
    print(n)


if __name__ == "__main__":
    main()
