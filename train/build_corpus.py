"""Build the ChatML task corpus (7 task types, English + Chinese) and the held-out eval sets.

Inputs live under train/work/ (fetched by make_models.sh). Outputs:
  work/corpus/<type>.jsonl   training examples {"id","type","lang","prompt","response"}
  eval/tasks/<type>.jsonl    held-out eval prompts {"id","type","lang","prompt","reference"}
Held-out items are removed from training by SOURCE item (package name, function, msgid, synset,
template+numbers), so nothing in eval/ is trained on.
"""
import ast
import glob
import gzip
import hashlib
import json
import os
import random
import re
import struct
import sys
import textwrap
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.join(HERE, "work")
X = os.path.join(WORK, "x")
LISTS = os.path.join(WORK, "lists")
ROOT = os.path.abspath(os.path.join(HERE, ".."))
EVAL_DIR = os.path.join(ROOT, "eval", "tasks")
OUT = os.path.join(WORK, "corpus")
SEED = 1234
N_EVAL_PER_LANG = 24          # 24 en + 24 zh = 48 eval prompts per type

TYPES = ["extraction", "math", "code", "rewrite", "summary", "qa", "chat"]
# training-example caps per type (keeps the mix balanced; tokens ~ 1-2M per type)
CAPS = {"extraction": 14000, "math": 16000, "code": 9000, "rewrite": 30000,
        "summary": 14000, "qa": 24000, "chat": 16000}


def nfc(s):
    return unicodedata.normalize("NFC", s)


def skey(s):
    return hashlib.md5(s.encode("utf-8")).hexdigest()


def deb822(path):
    rec = {}
    last = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                if rec:
                    yield rec
                rec = {}
                last = None
                continue
            if line[0] in " \t" and last:
                rec[last] += "\n" + line[1:]
            else:
                k, _, v = line.partition(":")
                last = k
                rec[k] = v.strip()
    if rec:
        yield rec


def long_desc(body):
    """Debian long-description body -> paragraphs (lines '.' are blank lines)."""
    out = []
    for ln in body.split("\n"):
        ln = ln.rstrip()
        out.append("" if ln.strip() == "." else ln.strip())
    text = "\n".join(out).strip()
    paras = [" ".join(p.split("\n")) for p in re.split(r"\n\s*\n", text)]
    return "\n\n".join(p for p in paras if p)


def ex(src, typ, lang, prompt, response):
    return {"src": src, "type": typ, "lang": lang, "prompt": nfc(prompt).strip(),
            "response": nfc(response).strip()}


# ---------------------------------------------------------------- extraction
def describe_package(rng, obj, keys, lang, deps=None, extra=()):
    """A package record as an extraction prompt: the instruction naming the keys, then the record's
    fields as sentences in a shuffled order (English or Chinese), `deps` as one more sentence, and
    `extra` sentences after them."""
    if lang == "en":
        parts = [rng.choice([f"The package {obj['name']} is at version {obj['version']}.",
                             f"{obj['name']} (version {obj['version']}) is a Debian package.",
                             f"Version {obj['version']} of {obj['name']} is available."]),
                 rng.choice([f"It belongs to the {obj['section']} section with {obj['priority']} priority.",
                             f"Its section is {obj['section']} and its priority is {obj['priority']}."]),
                 rng.choice([f"It is built for {obj['architecture']} and takes {obj['installed_size_kb']} KB once installed.",
                             f"Installed size: {obj['installed_size_kb']} KB; architecture: {obj['architecture']}."]),
                 f"It is maintained by {obj['maintainer']}."]
        if deps:
            parts.append("It depends on " + ", ".join(deps) + ".")
        rng.shuffle(parts)
        return rng.choice(["Extract the package details below as a JSON object with the keys ",
                           "Return a JSON object with the keys ",
                           "Convert this description into JSON with the keys "]) + \
            ", ".join(keys) + ".\n\n" + " ".join(parts + list(extra))
    parts = [f"软件包 {obj['name']} 的版本是 {obj['version']}。",
             f"它属于 {obj['section']} 分区，优先级为 {obj['priority']}。",
             f"适用架构为 {obj['architecture']}，安装后占用 {obj['installed_size_kb']} KB。",
             f"维护者是 {obj['maintainer']}。"]
    if deps:
        parts.append("它依赖于 " + "、".join(deps) + "。")
    rng.shuffle(parts)
    return rng.choice(["从下面的文字中提取软件包信息，输出 JSON 对象，键为 ",
                       "请把以下描述转换成 JSON 对象，使用这些键："]) + \
        ", ".join(keys) + "。\n\n" + "".join(parts + list(extra))


def gen_extraction(rng):
    pk = os.path.join(LISTS, "deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages")
    recs = [r for r in deb822(pk) if "Package" in r and "Version" in r]
    rng.shuffle(recs)
    out = []
    for r in recs[: CAPS["extraction"] + 2000]:
        obj = {"name": r["Package"], "version": r["Version"],
               "section": r.get("Section", "misc"), "priority": r.get("Priority", "optional"),
               "architecture": r.get("Architecture", "all"),
               "installed_size_kb": int(r.get("Installed-Size", "0") or 0),
               "maintainer": r.get("Maintainer", "")}
        deps = [d.strip().split(" ")[0] for d in r.get("Depends", "").split(",") if d.strip()][:4]
        if deps and rng.random() < 0.7:
            obj["depends"] = deps
        keys = list(obj.keys())
        lang = "zh" if rng.random() < 0.35 else "en"
        prompt = describe_package(rng, obj, keys, lang, obj.get("depends"))
        out.append(ex("pkg:" + r["Package"], "extraction", lang, prompt,
                      json.dumps(obj, ensure_ascii=False)))
    return out


# ---------------------------------------------------------------- math (synthetic)
EN_NAMES = ["Alice", "Bob", "Carmen", "David", "Emma", "Farid", "Grace", "Hiro", "Ivan", "Julia",
            "Kofi", "Lena", "Mateo", "Nina", "Omar", "Priya", "Quinn", "Rosa", "Sam", "Tara"]
ZH_NAMES = ["小明", "小红", "李华", "王芳", "张伟", "刘洋", "陈静", "杨磊", "赵敏", "周杰", "吴刚", "孙丽"]
EN_ITEMS = ["apples", "books", "pencils", "stickers", "marbles", "cookies", "stamps", "cards", "eggs", "tickets"]
ZH_ITEMS = [("苹果", "个"), ("书", "本"), ("铅笔", "支"), ("贴纸", "张"), ("弹珠", "颗"), ("饼干", "块"),
            ("邮票", "张"), ("鸡蛋", "个"), ("门票", "张"), ("橘子", "个")]


def _math_values(rng, t, lang, a, b, c):
    """The numbers of problem type t and what the texts print of them. Drawn from rng in the same
    order as ever (the corpus stays the same for a seed); only type 7 draws differently per language
    (a percentage off in English, a 折 discount in Chinese)."""
    v = {"a": a, "b": b, "c": c}
    if t == 0:
        v["sum"] = a + b
    elif t == 1:
        a = v["a"] = a + b
        v["diff"] = a - b
    elif t == 2:
        v["prod"] = b * c
    elif t == 3:
        v["tot"] = b * c
    elif t == 4:
        p = rng.randint(2, 40)
        bill = (p * c // 50 + 1) * 50
        v.update(p=p, bill=bill, cost=p * c, change=bill - p * c)
    elif t == 5:
        l, wd = rng.randint(3, 40), rng.randint(2, 30)
        v.update(l=l, wd=wd, area=l * wd, perim=2 * (l + wd), lw=l + wd)
    elif t == 6:
        s, h = rng.randint(20, 120), rng.randint(2, 9)
        v.update(s=s, h=h, dist=s * h)
    elif t == 7 and lang == "en":
        pct = rng.choice([10, 20, 25, 30, 40, 50, 75])
        price = rng.randint(2, 60) * 4
        off = price * pct // 100 if price * pct % 100 == 0 else price * pct / 100
        v.update(pct=pct, price=price, off=off, sale=price - off)
    elif t == 7:
        zhe = rng.choice([9, 8, 7, 6, 5])
        price = rng.randint(2, 60) * 10
        v.update(zhe=zhe, price=price, pct=zhe * 10, sale=price * zhe // 10)
    elif t == 8:
        x = rng.randint(1, 30)
        v.update(x=x, cx=c * x, rhs=c * x + b)
    elif t == 9:
        ages, y = a % 40 + 5, b % 20 + 1
        v.update(ages=ages, y=y, now=ages + c, later=ages + c + y)
    elif t == 10:
        k = [rng.randint(1, 99) for _ in range(rng.randint(3, 5))]
        v.update(s=sum(k), plus=" + ".join(map(str, k)), en_list=", ".join(map(str, k[:-1])), last=k[-1],
                 zh_list="、".join(map(str, k)))
    else:
        k = [rng.randint(1, 99) for _ in range(4)]
        s = sum(k)
        avg = s / 4
        v.update(s=s, k0=k[0], k1=k[1], k2=k[2], k3=k[3], avg=str(int(avg)) if avg == int(avg) else f"{avg:g}")
    return v


# (question, worked answer) per problem type, filled from _math_values and the names and items.
MATH_TEXT = {
    "en": [
        ("{n} has {a} {it} and buys {b} more. How many {it} does {n} have now?",
         "{n} starts with {a} {it} and adds {b}: {a} + {b} = {sum}.\nThe answer is {sum}."),
        ("{n} had {a} {it} and gave {b} to {m}. How many {it} are left?",
         "{n} gives away {b} of {a}: {a} - {b} = {diff}.\nThe answer is {diff}."),
        ("A box holds {c} {it}. How many {it} are in {b} boxes?",
         "Each box holds {c}, so {b} boxes hold {b} × {c} = {prod}.\nThe answer is {prod}."),
        ("{n} shares {tot} {it} equally among {c} friends. How many does each friend get?",
         "Divide {tot} by {c}: {tot} ÷ {c} = {b}.\nThe answer is {b}."),
        ("A notebook costs ${p}. {n} buys {c} notebooks and pays with a ${bill} bill. How much change does {n} get?",
         "The notebooks cost {c} × {p} = {cost} dollars.\nThe change is {bill} - {cost} = {change} dollars.\nThe answer is {change}."),
        ("A rectangle is {l} m long and {wd} m wide. What are its area and perimeter?",
         "Area = {l} × {wd} = {area} square meters.\nPerimeter = 2 × ({l} + {wd}) = {perim} meters.\nThe answer is area {area} m², perimeter {perim} m."),
        ("A train travels at {s} km/h for {h} hours. How far does it go?",
         "Distance = speed × time = {s} × {h} = {dist} km.\nThe answer is {dist} km."),
        ("A jacket costs ${price}. It is on sale for {pct}% off. What is the sale price?",
         "The discount is {pct}% of {price} = {off} dollars.\nThe sale price is {price} - {off} = {sale} dollars.\nThe answer is {sale}."),
        ("Solve for x: {c}x + {b} = {rhs}.",
         "Subtract {b} from both sides: {c}x = {rhs} - {b} = {cx}.\nDivide by {c}: x = {cx} ÷ {c} = {x}.\nThe answer is x = {x}."),
        ("{n} is {ages} years old. {m} is {c} years older than {n}. How old will {m} be in {y} years?",
         "{m} is {ages} + {c} = {now} years old now.\nIn {y} years {m} will be {now} + {y} = {later}.\nThe answer is {later}."),
        ("What is the sum of {en_list} and {last}?",
         "Add them step by step: {plus} = {s}.\nThe answer is {s}."),
        ("{n}'s test scores are {k0}, {k1}, {k2} and {k3}. What is the average score?",
         "The total is {k0} + {k1} + {k2} + {k3} = {s}.\nThe average is {s} ÷ 4 = {avg}.\nThe answer is {avg}."),
    ],
    "zh": [
        ("{n}有{a}{u}{it}，又买了{b}{u}。{n}现在一共有多少{u}{it}？",
         "原有{a}{u}，再加上{b}{u}：{a} + {b} = {sum}。\n答案是{sum}{u}。"),
        ("{n}有{a}{u}{it}，送给{m}{b}{u}后，还剩多少{u}？",
         "从{a}{u}中拿走{b}{u}：{a} - {b} = {diff}。\n答案是{diff}{u}。"),
        ("每个盒子装{c}{u}{it}，{b}个盒子一共装多少{u}？",
         "每盒{c}{u}，{b}盒共有 {b} × {c} = {prod}。\n答案是{prod}{u}。"),
        ("{n}把{tot}{u}{it}平均分给{c}个朋友，每人分到多少{u}？",
         "用总数除以人数：{tot} ÷ {c} = {b}。\n答案是{b}{u}。"),
        ("一本笔记本{p}元，{n}买了{c}本，付了{bill}元，应找回多少元？",
         "笔记本共花费 {c} × {p} = {cost} 元。\n找回 {bill} - {cost} = {change} 元。\n答案是{change}元。"),
        ("一个长方形长{l}米，宽{wd}米，它的面积和周长各是多少？",
         "面积 = {l} × {wd} = {area} 平方米。\n周长 = 2 × ({l} + {wd}) = {perim} 米。\n答案是面积{area}平方米，周长{perim}米。"),
        ("一列火车每小时行驶{s}千米，{h}小时行驶多少千米？",
         "路程 = 速度 × 时间 = {s} × {h} = {dist} 千米。\n答案是{dist}千米。"),
        ("一件外套原价{price}元，现在打{zhe}折，现价是多少元？",
         "打{zhe}折就是原价的{pct}%：{price} × {pct}% = {sale}。\n答案是{sale}元。"),
        ("解方程：{c}x + {b} = {rhs}。",
         "两边同时减去{b}：{c}x = {rhs} - {b} = {cx}。\n两边同时除以{c}：x = {cx} ÷ {c} = {x}。\n答案是 x = {x}。"),
        ("{n}今年{ages}岁，{m}比{n}大{c}岁。{y}年后{m}多少岁？",
         "{m}今年 {ages} + {c} = {now} 岁。\n{y}年后是 {now} + {y} = {later} 岁。\n答案是{later}岁。"),
        ("计算 {zh_list} 的和。",
         "逐个相加：{plus} = {s}。\n答案是{s}。"),
        ("{n}四次考试的成绩分别是{k0}、{k1}、{k2}和{k3}分，平均分是多少？",
         "总分是 {k0} + {k1} + {k2} + {k3} = {s}。\n平均分是 {s} ÷ 4 = {avg}。\n答案是{avg}分。"),
    ],
}


def math_problem(rng, lang):
    t = rng.randrange(12)
    a, b, c = rng.randint(2, 99), rng.randint(2, 60), rng.randint(2, 12)
    n, m = rng.sample(EN_NAMES if lang == "en" else ZH_NAMES, 2)
    it, u = (rng.choice(EN_ITEMS), "") if lang == "en" else rng.choice(ZH_ITEMS)
    v = _math_values(rng, t, lang, a, b, c)
    v.update(n=n, m=m, it=it, u=u)
    q, w = MATH_TEXT[lang][t]
    return q.format(**v), w.format(**v)


def gen_math(rng):
    out, seen = [], set()
    while len(out) < CAPS["math"] + 1000:
        lang = "zh" if rng.random() < 0.45 else "en"
        q, w = math_problem(rng, lang)
        if q in seen:
            continue
        seen.add(q)
        out.append(ex("math:" + q, "math", lang, q, w))
    return out


# ---------------------------------------------------------------- code
# Extra, never-trained code items for the eval set only (python3-apt's `apt` / `aptsources`
# packages): the stdlib functions are all used for training.
CODE_EVAL_EXTRA = ["/usr/lib/python3/dist-packages/apt", "/usr/lib/python3/dist-packages/aptsources"]


def gen_code(rng, files=None, root="/usr/lib/python3.11"):
    out, seen = [], set()
    if files is None:
        files = sorted(glob.glob("/usr/lib/python3.11/*.py") + glob.glob("/usr/lib/python3.11/*/*.py"))
    files = [f for f in files if "/test" not in f and "/idlelib/" not in f and "/lib2to3/" not in f
             and "site-packages" not in f and ("dist-packages" not in f or root != "/usr/lib/python3.11")]
    for fn in files:
        try:
            src = open(fn, encoding="utf-8").read()
            tree = ast.parse(src)
        except Exception:
            continue
        mod = os.path.relpath(fn, root)[:-3].replace("/", ".")
        if root != "/usr/lib/python3.11":
            mod = mod.replace(".__init__", "")
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef,)):
                continue
            doc = ast.get_docstring(node)
            if not doc or len(doc) < 20 or node.name.startswith("__"):
                continue
            seg = ast.get_source_segment(src, node)
            if not seg or len(seg) > 1500 or len(seg) < 80:
                continue
            seg = textwrap.dedent(" " * node.col_offset + seg)
            key = mod + "." + node.name + ":" + skey(seg)[:8]
            if seg in seen:
                continue
            seen.add(seg)
            args = ast.unparse(node.args)
            sig = f"{node.name}({args})"
            doc1 = doc.strip()
            lang = "zh" if rng.random() < 0.3 else "en"
            if lang == "en":
                p = rng.choice([f"Write a Python function `{sig}` (from the `{mod}` module) that does the following:\n{doc1}",
                                f"Implement `{sig}` in Python.\n\nDocstring:\n{doc1}",
                                f"Write the Python code for `{node.name}`:\n{doc1}"])
            else:
                p = rng.choice([f"编写一个 Python 函数 `{sig}`（来自 `{mod}` 模块），功能如下：\n{doc1}",
                                f"请用 Python 实现 `{sig}`。\n\n说明：\n{doc1}"])
            out.append(ex("code:" + key, "code", lang, p, seg))
    return out


# ---------------------------------------------------------------- rewrite (translation)
def read_mo(path):
    data = open(path, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    e = "<" if magic == 0x950412de else ">"
    _, n, oo, to = struct.unpack(e + "4I", data[4:20])
    pairs = []
    for i in range(n):
        ol, oof = struct.unpack(e + "2I", data[oo + 8 * i: oo + 8 * i + 8])
        tl, tof = struct.unpack(e + "2I", data[to + 8 * i: to + 8 * i + 8])
        mid = data[oof: oof + ol]
        ms = data[tof: tof + tl]
        if not mid or b"\x00" in mid or b"\x04" in mid:
            continue  # header, plurals, contexts
        try:
            pairs.append((mid.decode("utf-8"), ms.decode("utf-8")))
        except UnicodeDecodeError:
            pass
    return pairs


def clean_msg(s):
    return s.replace("_", "") if s.count("_") == 1 and re.search(r"_[A-Za-z]", s) else s


def gen_rewrite(rng, mo_files):
    out, seen = [], set()
    for mo in mo_files:
        for en, zh in read_mo(mo):
            en, zh = en.strip(), zh.strip()
            if not (12 <= len(en) <= 400) or not zh or not re.search(r"[\u4e00-\u9fff]", zh):
                continue
            if not re.search(r"[A-Za-z]{3}", en) or en in seen:
                continue
            seen.add(en)
            en2, zh2 = clean_msg(en), zh
            r = rng.random()
            if r < 0.55:
                p = rng.choice(["Translate into Chinese:\n", "Translate the following English text into Simplified Chinese:\n",
                                "把下面的英文翻译成中文：\n"]) + en2
                out.append(ex("mo:" + en, "rewrite", "zh" if p.startswith("把") else "en", p, zh2))
            elif r < 0.85:
                p = rng.choice(["Translate into English:\n", "把下面的中文翻译成英文：\n"]) + zh2
                out.append(ex("mo:" + en, "rewrite", "zh" if p.startswith("把") else "en", p, en2))
            else:
                p = rng.choice(["Rewrite this message in lowercase:\n", "Rewrite this message in uppercase:\n"]) + en2
                resp = en2.lower() if "lowercase" in p else en2.upper()
                out.append(ex("mo:" + en, "rewrite", "en", p, resp))
    # Debian descriptions with a Chinese translation: synopsis translation pairs
    en_by_md5 = {}
    for f in glob.glob(os.path.join(LISTS, "*bookworm_main_i18n_Translation-en")):
        for r in deb822(f):
            if "Description-md5" in r:
                en_by_md5[r["Description-md5"]] = r.get("Description-en", "")
    for f in glob.glob(os.path.join(LISTS, "*Translation-zh%5fCN")):
        for r in deb822(f):
            en = en_by_md5.get(r.get("Description-md5"))
            zh = r.get("Description-zh_CN")
            if not en or not zh:
                continue
            es, zs = en.split("\n")[0].strip(), zh.split("\n")[0].strip()
            if len(es) > 8 and zs and es not in seen:
                seen.add(es)
                out.append(ex("mo:" + es, "rewrite", "zh", "把下面的英文翻译成中文：\n" + es, zs))
    return out


# ---------------------------------------------------------------- summary
def gen_summary(rng):
    out = []
    for f in glob.glob(os.path.join(LISTS, "*bookworm_main_i18n_Translation-en")):
        for r in deb822(f):
            d = r.get("Description-en", "")
            syn, _, body = d.partition("\n")
            body = long_desc(body)
            if len(body) < 200 or len(body) > 1400 or not syn.strip():
                continue
            p = rng.choice(["Summarize this package description in one line:\n\n",
                            "Write a one-line synopsis for the following description.\n\n",
                            "Give a short summary (one line) of this text:\n\n"]) + body
            out.append(ex("pkg:" + r["Package"], "summary", "en", p, syn.strip()))
    for f in glob.glob(os.path.join(LISTS, "*Translation-zh%5fCN")):
        for r in deb822(f):
            d = r.get("Description-zh_CN", "")
            syn, _, body = d.partition("\n")
            body = long_desc(body).replace("\n\n", "\n")
            if len(body) < 60 or not syn.strip():
                continue
            body = re.sub(r"(?<=[\u3000-\u9fff\uff00-\uffef]) (?=[\u3000-\u9fff\uff00-\uffef])", "", body)
            p = rng.choice(["用一句话概括下面的软件包描述：\n\n", "请为下面的内容写一行简介：\n\n"]) + body
            out.append(ex("pkg:" + r["Package"], "summary", "zh", p, syn.strip()))
    return out


# ---------------------------------------------------------------- qa (definitions)
def gen_qa(rng):
    out = []
    pos_name = {"n": "noun", "v": "verb", "a": "adjective", "s": "adjective", "r": "adverb"}
    for fn in ["data.noun", "data.verb", "data.adj", "data.adv"]:
        p = os.path.join(X, "usr/share/wordnet", fn)
        for line in open(p, encoding="latin-1"):
            if line.startswith("  "):
                continue
            head, _, gloss = line.partition(" | ")
            f = head.split()
            if len(f) < 5:
                continue
            pos = f[2]
            nw = int(f[3], 16)
            words = [f[4 + 2 * i].replace("_", " ") for i in range(nw)]
            w = words[0]
            if re.search(r"[^A-Za-z \-']", w) or len(w) < 3:
                continue
            gl = gloss.strip()
            defs, _, exs = gl.partition('; "')
            defs = defs.strip().rstrip(";")
            if len(defs) < 10:
                continue
            q = rng.choice([f"What does the word \"{w}\" mean?", f"Define \"{w}\".",
                            f"What is the meaning of \"{w}\" as {'an' if pos_name[pos][0] in 'aeiou' else 'a'} {pos_name[pos]}?"])
            a = f"\"{w}\" ({pos_name[pos]}): {defs}."
            if len(words) > 1:
                a += " Synonyms: " + ", ".join(words[1:4]) + "."
            if exs:
                a += " Example: \"" + exs.split('"')[0].strip() + "\""
            out.append(ex(f"wn:{w}:{pos}", "qa", "en", q, a))
    # Chinese: what is package X? (zh synopsis + first paragraph)
    for f in glob.glob(os.path.join(LISTS, "*Translation-zh%5fCN")):
        for r in deb822(f):
            d = r.get("Description-zh_CN", "")
            syn, _, body = d.partition("\n")
            body = long_desc(body).split("\n\n")[0]
            body = re.sub(r"(?<=[\u3000-\u9fff\uff00-\uffef]) (?=[\u3000-\u9fff\uff00-\uffef])", "", body)
            if not syn.strip() or len(body) < 20:
                continue
            q = rng.choice([f"{r['Package']} 是什么？", f"Debian 软件包 {r['Package']} 有什么用途？"])
            out.append(ex("pkg:" + r["Package"], "qa", "zh", q, f"{r['Package']}：{syn.strip()}。{body}"))
    # Chinese: translated .mo messages as "what does this option mean" are not definitions; keep
    # the zh share small rather than invent answers.
    return out


# ---------------------------------------------------------------- chat (open prose)
def brown_paragraphs():
    d = os.path.join(X, "brown")
    for fn in sorted(glob.glob(os.path.join(d, "c[a-r][0-9][0-9]"))):
        for para in open(fn, encoding="latin-1").read().split("\n\n"):
            toks = [t.rsplit("/", 1)[0] for t in para.split() if "/" in t]
            if len(toks) < 25:
                continue
            s = " ".join(toks)
            s = s.replace("``", "\"").replace("''", "\"")
            s = re.sub(r" ([,.;:?!)'])", r"\1", s)
            s = re.sub(r"\( ", "(", s)
            s = re.sub(r" n't", "n't", s)
            s = re.sub(r"\" (.*?) \"", r'"\1"', s)
            yield os.path.basename(fn), s


def fortunes(path, enc="utf-8"):
    try:
        txt = open(path, encoding=enc, errors="replace").read()
    except FileNotFoundError:
        return []
    txt = re.sub(r"\x1b\[[0-9;]*m", "", txt)
    return [f.strip("\n") for f in txt.split("\n%\n") if f.strip()]


def gen_chat(rng):
    out = []
    for fn, s in brown_paragraphs():
        sents = re.split(r"(?<=[.!?\"]) (?=[A-Z\"])", s)
        if len(sents) < 3:
            continue
        k = max(1, len(sents) // 3)
        head, tail = " ".join(sents[:k]), " ".join(sents[k:])
        if len(tail) > 1200:
            tail = tail[:1200].rsplit(" ", 1)[0] + " ..."
        p = rng.choice(["Continue this passage:\n\n", "Write the next few sentences:\n\n", "Keep writing:\n\n"]) + head
        out.append(ex("brown:" + fn + ":" + skey(s)[:8], "chat", "en", p, tail))
    fdir = os.path.join(X, "usr/share/games/fortunes")
    for fn in sorted(glob.glob(os.path.join(fdir, "*"))):
        if "." in os.path.basename(fn) or os.path.isdir(fn):
            continue
        base = os.path.basename(fn)
        zh = base in ("chinese", "tang300", "song100") or os.path.exists(fn + ".u8") is False and "zh" in fn
        for fo in fortunes(fn):
            if not re.search(r"[\u4e00-\u9fff]", fo):
                if len(fo) < 40 or len(fo) > 900:
                    continue
                p = rng.choice(["Tell me something witty.", "Share a quotation.", "Say something memorable.",
                                "Give me a fortune cookie message."])
                if rng.random() < 0.5:
                    p = f"Share a saying from the \"{base}\" collection."
                out.append(ex("fortune:" + skey(fo), "chat", "en", p, fo))
            else:
                lines = [l for l in fo.split("\n") if l.strip()]
                if len(lines) < 2 or len(fo) > 900:
                    continue
                p = rng.choice(["请续写：\n", "接着写下去：\n"]) + lines[0].strip()
                out.append(ex("fortune:" + skey(fo), "chat", "zh", p, "\n".join(l.strip() for l in lines[1:])))
    return out


# ---------------------------------------------------------------- split + write
def split(typ, items, rng):
    """First selection: 24 en + 24 zh eval items by source; training = other sources, capped.
    Returns (eval, train, pool); pool = items whose source is neither trained nor in eval."""
    rng.shuffle(items)
    ev, ev_src = [], set()
    for lang in ("en", "zh"):
        n = 0
        for it in items:
            if n >= N_EVAL_PER_LANG:
                break
            if it["lang"] == lang and it["src"] not in ev_src and len(it["prompt"]) < 1500:
                ev_src.add(it["src"])
                ev.append(it)
                n += 1
    if len(ev) < 2 * N_EVAL_PER_LANG:   # not enough zh: top up with en
        for it in items:
            if len(ev) >= 2 * N_EVAL_PER_LANG:
                break
            if it["src"] not in ev_src and len(it["prompt"]) < 1500:
                ev_src.add(it["src"])
                ev.append(it)
    train = [it for it in items if it["src"] not in ev_src][: CAPS[typ]]
    train_src = {it["src"] for it in train}
    pool = [it for it in items if it["src"] not in train_src and it["src"] not in ev_src]
    return ev, train, pool


PROMPT_WINDOW_TYPES = ("code", "rewrite", "summary", "qa", "chat")


def make_leak_check(trains):
    """An eval item leaks if its reference text, or (for natural-text prompts) a 40-char window of
    its prompt, occurs anywhere in ANY type's training prompts/responses (catches duplicate
    package descriptions, shared synopses, fortunes present in several collections, ...)."""
    blob = "\n\x00".join(it["prompt"] + "\n\x00" + it["response"] for tr in trains.values() for it in tr)
    responses = {it["response"] for tr in trains.values() for it in tr}

    def leaks(it):
        ref = it["response"]
        if ref in responses or (len(ref) >= 6 and ref in blob):
            return True
        if it["type"] in PROMPT_WINDOW_TYPES:
            body = it["prompt"].split("\n", 1)[-1]
            if len(body) >= 60:
                for f in (0.25, 0.5, 0.75):
                    k = int(len(body) * f)
                    if body[k - 20:k + 20] in blob:
                        return True
    return leaks


def write_split(typ, ev, train):
    with open(os.path.join(EVAL_DIR, typ + ".jsonl"), "w", encoding="utf-8") as f:
        for i, it in enumerate(ev):
            f.write(json.dumps({"id": f"{typ}-{i:03d}", "type": typ, "lang": it["lang"], "prompt": it["prompt"],
                                "reference": it["response"]}, ensure_ascii=False) + "\n")
    with open(os.path.join(OUT, typ + ".jsonl"), "w", encoding="utf-8") as f:
        for i, it in enumerate(train):
            f.write(json.dumps({"id": f"{typ}-t{i:06d}", "type": typ, "lang": it["lang"], "prompt": it["prompt"],
                                "response": it["response"]}, ensure_ascii=False) + "\n")
    nz = sum(1 for it in train if it["lang"] == "zh")
    print(f"{typ:10s} train {len(train):6d} (zh {nz}) eval {len(ev)} (zh {sum(1 for e in ev if e['lang'] == 'zh')})",
          flush=True)


def main():
    """Rebuilds all 7 types (eval selection is global: it checks every type's training text)."""
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(EVAL_DIR, exist_ok=True)
    mo_files = sorted(glob.glob("/usr/share/locale/zh_CN/LC_MESSAGES/*.mo") +
                      glob.glob(os.path.join(X, "usr/share/locale/zh_CN/LC_MESSAGES/*.mo")))
    json.dump(mo_files, open(os.path.join(WORK, "mo_files.json"), "w"))
    gens = {"extraction": gen_extraction, "math": gen_math, "code": gen_code,
            "rewrite": lambda r: gen_rewrite(r, mo_files), "summary": gen_summary, "qa": gen_qa, "chat": gen_chat}
    evs, trains, pools = {}, {}, {}
    for i, typ in enumerate(TYPES):
        rng = random.Random(SEED + i)
        items = gens[typ](rng)
        evs[typ], trains[typ], pools[typ] = split(typ, items, random.Random(SEED + 100 + i))
    extra = sorted(f for d in CODE_EVAL_EXTRA for f in glob.glob(os.path.join(d, "*.py")))
    extra_items = gen_code(random.Random(SEED + 200), extra, "/usr/lib/python3/dist-packages")
    random.Random(SEED + 201).shuffle(extra_items)
    pools["code"] += extra_items
    # second pass: replace eval items whose text also occurs in training (any type) by unused,
    # non-leaking items of the same type and language; drop them if the type has no spare items.
    leaks = make_leak_check(trains)
    for typ in TYPES:
        used = {it["src"] for it in evs[typ]}
        spare = [it for it in pools[typ] if len(it["prompt"]) < 1500]
        out, n_rep, n_drop = [], 0, 0
        for it in evs[typ]:
            if not leaks(it):
                out.append(it)
                continue
            rep = None
            while spare:
                cand = spare.pop(0)
                if cand["lang"] == it["lang"] and cand["src"] not in used and not leaks(cand):
                    rep = cand
                    break
            if rep is None:
                n_drop += 1
                continue
            used.add(rep["src"])
            out.append(rep)
            n_rep += 1
        evs[typ] = out
        print(f"{typ:10s} eval leak check: replaced {n_rep}, dropped {n_drop}", flush=True)
        write_split(typ, evs[typ], trains[typ])


if __name__ == "__main__":
    main()
