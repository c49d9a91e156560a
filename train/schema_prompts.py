#!/usr/bin/env python3
"""Schema'd extraction prompts for training a draft on the target's constrained outputs.

Each line is {"id", "type": "extraction", "lang", "prompt", "schema"}: a Debian package record described
in English or Chinese, to be returned as JSON under a JSON Schema of the structured suite's families
(enum fields, a nested maintainer object, bounded arrays, nullable fields, booleans, tag enums), with
the enum lists and array bounds varied. `pocketflash gen` reads a line's "schema" and constrains that
response, so the responses are the target's own constrained text: where the schema overrides what the
target would write (a value outside an enum, an array cut at maxItems, a nested object), the draft
sees what the target writes next under the constraint.

Held out: every package named in an eval prompt (eval/tasks/*.jsonl and eval/tasks/structured), so
the structured suite measures prompts the draft was not trained on.

    schema_prompts.py --n 4000 --out FILE.jsonl
"""
import argparse
import glob
import json
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_corpus import LISTS, ROOT, deb822, describe_package, nfc  # noqa: E402

SECTIONS = ["admin", "devel", "doc", "libs", "net", "python", "text", "utils", "web"]
PRIORITIES = ["required", "important", "standard", "optional", "extra"]
ARCHES = ["all", "amd64", "arm64", "any"]
TAGS = ["cli", "network", "compression", "editor", "library"]
FAMILIES = ["base", "depends", "maintainer_object", "essential", "homepage", "nullable", "vcs", "tags"]


def held_out_names():
    """Every word of an eval prompt that could be a package name."""
    words = set()
    for path in glob.glob(os.path.join(ROOT, "eval", "tasks", "**", "*.jsonl"), recursive=True):
        for line in open(path, encoding="utf-8"):
            r = json.loads(line)
            words.update(re.findall(r"[a-z0-9][a-z0-9.+-]+", r.get("prompt", "") + " " + r.get("reference", "")))
    return words


def records(held):
    pk = os.path.join(LISTS, "deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages")
    out = []
    for r in deb822(pk):
        if "Package" not in r or "Version" not in r or r["Package"] in held:
            continue
        deps = [d.strip().split(" ")[0] for d in r.get("Depends", "").split(",") if d.strip()]
        out.append({"name": r["Package"], "version": r["Version"], "section": r.get("Section", "misc").split("/")[-1],
                    "priority": r.get("Priority", "optional"), "architecture": r.get("Architecture", "all"),
                    "installed_size_kb": int(r.get("Installed-Size", "0") or 0), "maintainer": r.get("Maintainer", ""),
                    "depends": deps, "homepage": r.get("Homepage"), "essential": r.get("Essential") == "yes",
                    "vcs": r.get("Vcs-Git") or r.get("Vcs-Browser")})
    return out


def tags_of(r):
    t = []
    if r["name"].startswith("lib"):
        t.append("library")
    if r["section"] in ("net", "web"):
        t.append("network")
    if any(k in r["name"] for k in ("zip", "xz", "bz", "zstd", "lz", "compress")):
        t.append("compression")
    if r["section"] == "editors":
        t.append("editor")
    if r["section"] in ("utils", "admin") and not r["name"].startswith("lib"):
        t.append("cli")
    return t


def enum_of(rng, base, pool):
    """The suite's list, or a variation: some values dropped, some of the pool's added."""
    if rng.random() < 0.6:
        return list(base)
    kept = [v for v in base if rng.random() < 0.8]
    extra = rng.sample(pool, min(len(pool), rng.randint(0, 3)))
    vals = list(dict.fromkeys(kept + extra))
    return vals or list(base)


def build(rng, r, family, all_sections):
    s = {"name": {"type": "string"}, "version": {"type": "string"},
         "section": {"enum": enum_of(rng, SECTIONS, all_sections)},
         "priority": {"enum": enum_of(rng, PRIORITIES, ["optional", "standard"])},
         "architecture": {"enum": enum_of(rng, ARCHES, ["i386", "armhf"])},
         "installed_size_kb": {"type": "integer"}, "maintainer": {"type": "string"}}
    required = list(s)
    obj = {k: r[k] for k in required}
    en, zh = [], []   # the sentences this family adds to the description
    if family == "depends" and r["depends"]:
        lo, hi = rng.choice([(1, 4), (1, 3), (1, 2), (0, 2)])
        s["depends"] = {"type": "array", "items": {"type": "string"}, "minItems": lo, "maxItems": hi}
        required.append("depends")
    elif family == "maintainer_object":
        s["maintainer"] = {"type": "object", "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
                           "required": ["name", "email"], "additionalProperties": False}
    elif family == "essential":
        s["essential"] = {"type": "boolean"}
        en.append("It is an essential package." if r["essential"] else "It is not an essential package.")
        zh.append("它是必需软件包。" if r["essential"] else "它不是必需软件包。")
    elif family == "homepage":
        s["installed_size_kb"] = {"type": "number"}
        s["homepage"] = {"anyOf": [{"type": "string"}, {"type": "null"}]}
        en.append(f"Its homepage is {r['homepage']}." if r["homepage"] else "It has no homepage.")
        zh.append(f"它的主页是 {r['homepage']}。" if r["homepage"] else "它没有主页。")
    elif family == "nullable":
        s["architecture"] = {"type": ["string", "null"]}
        s["depends"] = {"anyOf": [{"type": "array", "items": {"type": "string"}, "minItems": 1,
                                   "maxItems": rng.choice([2, 3, 4])}, {"type": "null"}]}
        required.append("depends")
        if not r["depends"]:
            en.append("It has no dependencies.")
            zh.append("它没有依赖。")
    elif family == "vcs":
        s["vcs"] = {"type": "null"} if rng.random() < 0.7 else {"anyOf": [{"type": "string"}, {"type": "null"}]}
        en.append(f"Its version-control repository is {r['vcs']}." if r["vcs"] else
                  "It has no version-control repository.")
        zh.append(f"它的版本控制仓库是 {r['vcs']}。" if r["vcs"] else "它没有版本控制仓库。")
    elif family == "tags":
        s["depends"] = {"type": "array", "items": {"type": "string"}, "minItems": 0, "maxItems": rng.choice([2, 3])}
        required.append("depends")
        s["tags"] = {"type": "array", "items": {"enum": TAGS}, "minItems": 1, "maxItems": 2}
        t = tags_of(r) or [rng.choice(TAGS)]
        en.append("Tags: " + ", ".join(t) + ".")
        zh.append("标签：" + "、".join(t) + "。")
    schema = {"type": "object", "properties": s, "required": required, "additionalProperties": False}
    return schema, list(s), en, zh


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261204)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    held = held_out_names()
    recs = records(held)
    all_sections = sorted({r["section"] for r in recs})
    # most records from the suite's sections (its documents' values are in its enums), some from any
    in_enum = [r for r in recs if r["section"] in SECTIONS and r["architecture"] in ARCHES]
    tmp = a.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for i in range(a.n):
            r = rng.choice(in_enum if rng.random() < 0.75 else recs)
            family = FAMILIES[i % len(FAMILIES)]
            schema, keys, en, zh = build(rng, r, family, all_sections)
            lang = "zh" if rng.random() < 0.4 else "en"
            with_deps = "depends" in keys or rng.random() < 0.3
            prompt = nfc(describe_package(rng, r, keys, lang, r["depends"][:4] if with_deps else None,
                                          en if lang == "en" else zh)).strip()
            f.write(json.dumps({"id": f"extraction-schema{i:05d}", "type": "extraction", "lang": lang, "prompt": prompt,
                                "schema": schema}, ensure_ascii=False) + "\n")
    os.replace(tmp, a.out)
    print(f"schema prompts: {a.n} from {len(recs)} records ({len(held)} eval words held out) -> {a.out}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
