"""Long-input task examples (inputs of 300-1,500 tokens): one-line summaries of manual pages and
package descriptions, titles for handbook sections, and JSON extracted from a manual page.

  tune_long.py          work/tune/long_train.jsonl (sources heldout.py does not reserve) and
                        work/tune/long_eval.jsonl (24 en + 24 zh items from the reserved sources only;
                        it becomes eval/tasks/long.jsonl with the target that can read 2,048 tokens)
Token counts are the pretraining tokenizer's (work/pre/tokenizer.json).
"""
import glob
import json
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from heldout import reserved  # noqa: E402
from qwen_bpe import QwenBPE  # noqa: E402
import pretrain_corpus as P  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "work", "tune")
MIN_TOK, MAX_TOK = 300, 1500
SEED = 20261206
_CJK_GAP = re.compile(r"(?<=[\u3400-\u9fff\uff00-\uffef\u3000-\u303f]) +(?=[\u3400-\u9fff\uff00-\uffef\u3000-\u303f])")


def tidy(text, lang):
    """Man-page layout out of the text: the indentation and, in Chinese, the justification spaces."""
    lines = [ln.strip() for ln in text.split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    if lang == "zh":
        text = _CJK_GAP.sub("", text)
        text = re.sub(r" {2,}", " ", text)
    return text


def fit(tok, paras, lo=MIN_TOK, hi=MAX_TOK):
    """The longest run of leading paragraphs within hi tokens, or None under lo."""
    out, n = [], 0
    for p in paras:
        k = len(tok.encode(p, allow_special=False)) + 1
        if n + k > hi:
            break
        out.append(p)
        n += k
    return ("\n\n".join(out), n) if n >= lo else (None, n)


def man_page(path, lang):
    """(name, section, one-line description, the page's other sections as paragraphs) or None."""
    raw = P.render_man(path)
    lines = raw.split("\n")
    if len(lines) < 10:
        return None
    head = re.match(r"^(\S+)\((\w+)\)", lines[0].strip())
    if not head:
        return None
    body = [ln for ln in lines[1:-1]]
    text = "\n".join(body)
    m = re.search(r"^NAME[^\n]*\n(.*?)\n\s*\n", text, re.S | re.M)
    if not m:
        return None
    name_line = " ".join(m.group(1).split())
    if " - " not in name_line:
        return None
    desc = name_line.split(" - ", 1)[1].strip()
    if lang == "zh":
        desc = _CJK_GAP.sub("", desc)
    rest = tidy(text[:m.start()] + text[m.end():], lang)
    paras = [p for p in re.split(r"\n\s*\n", rest) if p.strip()]
    return head.group(1).lower(), head.group(2), desc, paras


def handbook_sections(path):
    """(title, paragraphs) of each numbered section of a handbook page."""
    text = P.html_text(path)
    out, title, cur = [], None, []
    for para in re.split(r"\n\s*\n", text):
        h = re.match(r"^\d+(?:\.\d+)+\.\s+(\S.{2,80})$", para.strip())
        if h:
            if title and cur:
                out.append((title, cur))
            title, cur = h.group(1).strip(), []
        elif title:
            cur.append(para.strip())
    if title and cur:
        out.append((title, cur))
    return out


PROMPTS = {
    ("man", "en"): ["Summarize this manual page in one line.", "What does this program do? Answer in one line.",
                    "In one sentence, what is this command for?"],
    ("man", "zh"): ["用一句话概括下面的手册页。", "这个命令是做什么的？用一句话回答。"],
    ("pkg", "en"): ["Summarize this package description in one line.", "Write a one-line synopsis of this package."],
    ("pkg", "zh"): ["用一句话概括这个软件包的描述。"],
    ("sec", "en"): ["Give this section a short title.", "What is a good heading for this section?"],
    ("sec", "zh"): ["为下面这一节起一个简短的标题。", "这一节的标题应该是什么？"],
    ("json", "en"): ["Read this manual page and return a JSON object with the keys name, section, summary."],
    ("json", "zh"): ["阅读下面的手册页，输出 JSON 对象，键为 name, section, summary。"],
}


def chinese(text, share=0.2):
    """True when CJK characters are at least `share` of the text (untranslated pages are English)."""
    return len(P.CJK.findall(text)) >= share * max(1, len(text))


def items(tok, rng, want_reserved):
    """Every long item of the sources on one side of the reservation: (kind, lang, src, prompt, answer).
    A Chinese item needs a Chinese answer and a mostly Chinese input (some pages are untranslated)."""
    out = []
    add = out.append

    def keep(kind, lang, src, prompt, ans, said=None):
        if lang != "zh" or (chinese(said or ans, 0.3) and chinese(prompt)):
            add((kind, lang, src, prompt, ans))
    for lang, pattern in (("en", "/usr/share/man/man*/*.gz"), ("zh", "/usr/share/man/zh_CN/man*/*.gz")):
        for path in sorted(p for p in glob.glob(P.X + pattern) if os.path.isfile(p)):
            if reserved("man", path) != want_reserved:
                continue
            page = man_page(path, lang)
            if not page:
                continue
            name, sec, desc, paras = page
            text, n = fit(tok, paras)
            if not text:
                continue
            keep("man", lang, "man:" + name, rng.choice(PROMPTS[("man", lang)]) + "\n\n" + text, desc)
            if rng.random() < 0.3:
                full = f"NAME\n{name} - {desc}\n\n" + text
                obj = {"name": name, "section": sec, "summary": desc}
                keep("json", lang, "man:" + name, PROMPTS[("json", lang)][0] + "\n\n" + full,
                     json.dumps(obj, ensure_ascii=False), desc)
    hb = os.path.join(P.DOC, "debian-handbook", "html")
    for lang, sub in (("en", "en-US"), ("zh", "zh-CN")):
        for path in sorted(glob.glob(os.path.join(hb, sub, "*.html"))):
            if reserved("page", path) != want_reserved:
                continue
            for title, paras in handbook_sections(path):
                text, n = fit(tok, paras)
                if text:
                    keep("sec", lang, "page:" + os.path.basename(path) + "#" + title,
                         rng.choice(PROMPTS[("sec", lang)]) + "\n\n" + text, title)
    for lang, suffix in (("en", "en"), ("zh", "zh_CN")):
        for doc_lang, doc in P.description_docs(suffix, lang, per_doc=1, want_reserved=want_reserved):
            synopsis, _, body = doc.partition("\n\n")
            pkg, _, syn = synopsis.partition(": ")
            text, n = fit(tok, [p for p in body.split("\n\n") if p.strip()])
            if text and syn:
                keep("pkg", lang, "pkg:" + pkg, rng.choice(PROMPTS[("pkg", lang)]) + "\n\n" + text, syn)
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    tok = QwenBPE.load(os.path.join(P.PRE, "tokenizer.json"))
    rng = random.Random(SEED)
    ev_pool = items(tok, rng, True)
    rng.shuffle(ev_pool)
    ev = []
    for lang in ("en", "zh"):
        by_kind = {}
        for it in ev_pool:
            if it[1] == lang:
                by_kind.setdefault(it[0], []).append(it)
        kinds = [k for k in ("man", "pkg", "sec", "json") if by_kind.get(k)]
        k = 0
        while sum(1 for e in ev if e[1] == lang) < 24 and any(by_kind.values()):
            kind = kinds[k % len(kinds)]
            k += 1
            while by_kind[kind]:
                it = by_kind[kind].pop()
                if it[2] not in {e[2] for e in ev}:
                    ev.append(it)
                    break
    with open(os.path.join(OUT, "long_eval.jsonl"), "w", encoding="utf-8") as f:
        for i, (kind, lang, src, prompt, ans) in enumerate(ev):
            f.write(json.dumps({"id": f"long-{i:03d}", "type": "long", "lang": lang, "kind": kind, "prompt": prompt,
                                "reference": ans}, ensure_ascii=False) + "\n")
    train = items(tok, rng, False)
    with open(os.path.join(OUT, "long_train.jsonl"), "w", encoding="utf-8") as f:
        for i, (kind, lang, src, prompt, ans) in enumerate(train):
            f.write(json.dumps({"id": f"long-t{i:06d}", "type": "long", "lang": lang, "kind": kind, "src": src,
                                "prompt": prompt, "response": ans}, ensure_ascii=False) + "\n")
    count = lambda xs: {f"{k}/{l}": sum(1 for x in xs if x[0] == k and x[1] == l)  # noqa: E731
                        for k in ("man", "pkg", "sec", "json") for l in ("en", "zh")}
    print("eval", len(ev), count(ev), "\ntrain", len(train), count(train), flush=True)


if __name__ == "__main__":
    main()
