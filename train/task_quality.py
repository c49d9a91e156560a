"""How well a target does the held-out tasks, read from its greedy answers by the C engine.

  task_quality.py MODEL.gguf [--tasks DIR] [--json OUT]
runs `pocketflash gen` (greedy; 512 tokens for math, whose column-form working runs to ~430 tokens
for a percentage, 256 for the rest) over the math and extraction eval prompts (and long, where DIR
has it) and scores:
- math: the numbers of the answer's final line ("The answer is ..." / "答案是...") equal the
  reference's, in order;
- extraction: the answer parses as a JSON object equal to the reference (every field right), and
  the share of the reference's fields the answer has right;
- long: the answer's first line equals the reference after case and space folding (how often a
  summary or title is word for word the page's own).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))
_NUM = re.compile(r"-?\d+(?:\.\d+)?")


def final_numbers(text):
    lines = [ln for ln in text.strip().split("\n") if ln.strip()]
    for ln in reversed(lines):
        m = re.search(r"(The answer is|答案是)(.*)", ln)
        if m:
            return [float(x) for x in _NUM.findall(m.group(2))]
    return None


def fields(answer, ref):
    try:
        obj = json.loads(answer.strip())
    except ValueError:
        return False, 0.0
    if not isinstance(obj, dict):
        return False, 0.0
    right = sum(1 for k, v in ref.items() if obj.get(k) == v)
    return obj == ref, right / max(1, len(ref))


def fold(s):
    return " ".join(s.strip().split("\n")[0].lower().split())


def generate(model, path, n=256):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.jsonl")
        subprocess.run([os.path.join(ROOT, "pocketflash"), "gen", "-m", model, "-i", path, "-o", out, "-n", str(n)],
                       check=True, stdout=subprocess.DEVNULL)
        return {json.loads(x)["id"]: json.loads(x)["response"] for x in open(out, encoding="utf-8")}


def main():
    args = sys.argv[1:]
    model = args[0]
    tasks = args[args.index("--tasks") + 1] if "--tasks" in args else os.path.join(ROOT, "eval", "tasks")
    res = {}
    for typ in ("math", "extraction", "long"):
        path = os.path.join(tasks, typ + ".jsonl")
        if not os.path.exists(path):
            continue
        items = [json.loads(x) for x in open(path, encoding="utf-8")]
        got = generate(model, path, 512 if typ == "math" else 256)
        if typ == "math":
            ok = [final_numbers(got[e["id"]]) == final_numbers(e["reference"]) for e in items]
            res["math"] = {"right": sum(ok), "of": len(ok)}
        elif typ == "extraction":
            sc = [fields(got[e["id"]], json.loads(e["reference"])) for e in items]
            res["extraction"] = {"all_fields_right": sum(1 for a, _ in sc if a), "of": len(sc),
                                 "fields_right": round(sum(f for _, f in sc) / len(sc), 4)}
        else:
            ok = [fold(got[e["id"]]) == fold(e["reference"]) for e in items]
            res["long"] = {"word_for_word": sum(ok), "of": len(ok)}
    print(json.dumps(res, ensure_ascii=False))
    if "--json" in args:
        json.dump(res, open(args[args.index("--json") + 1], "w"), indent=1)


if __name__ == "__main__":
    main()
