"""Math tuning examples whose every multi-digit operation is worked out step by step, in one of two forms.

- `place` (the tuning's first form): each step changes one place, `238 - 49 = 238 - 40 - 9 = 198 - 9
  = 189`; multiplication as a sum of place-value products, division as long division. The tuned
  target learned the form but not the links (`95 + 62 = 95 + 60 + 2 = 155 + 2 = 155`): each still
  asks for a multi-digit sum.
- `column` (column_math.py, the form the tuning switched to): one digit a step, the digits found so
  far written after each, `238 - 49: 18 - 9 = 9 (9), 13 - 4 - 1 = 8 (89), 2 - 0 - 1 = 1 (189)`.
The questions are the eval's 12 problem kinds in new wordings and numbers, 10 further kinds, and
bare calculations; each answer ends with the line the eval reads ("The answer is ..." / "答案是...").

  tune_math.py check    generate a sample and verify every "a op b = c" it writes, in both forms
"""
import os
import random
import re
import sys
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import column_math as C  # noqa: E402

EN_NAMES = ["Alice", "Bob", "Carmen", "David", "Emma", "Farid", "Grace", "Hiro", "Ivan", "Julia", "Kofi",
            "Lena", "Mateo", "Nina", "Omar", "Priya", "Quinn", "Rosa", "Sam", "Tara", "Uma", "Victor",
            "Wen", "Xavier", "Yara", "Zoe", "Ahmed", "Beatriz", "Chen", "Dmitri"]
ZH_NAMES = ["小明", "小红", "李华", "王芳", "张伟", "刘洋", "陈静", "杨磊", "赵敏", "周杰", "吴刚", "孙丽",
            "黄蕾", "林涛", "郭静", "何平", "高远", "马超", "罗琳", "梁晨"]
EN_ITEMS = ["apples", "books", "pencils", "stickers", "marbles", "cookies", "stamps", "cards", "eggs",
            "tickets", "oranges", "bottles", "shells", "coins", "boxes", "plants", "beads", "cups"]
ZH_ITEMS = [("苹果", "个"), ("书", "本"), ("铅笔", "支"), ("贴纸", "张"), ("弹珠", "颗"), ("饼干", "块"),
            ("邮票", "张"), ("鸡蛋", "个"), ("门票", "张"), ("橘子", "个"), ("瓶水", "瓶"), ("贝壳", "个"),
            ("硬币", "枚"), ("盆花", "盆"), ("珠子", "颗"), ("杯子", "个")]


def places(n):
    """n's nonzero place values, largest first: 409 -> [400, 9]."""
    out, p = [], 1
    while n:
        d = n % 10
        if d:
            out.append(d * p)
        n //= 10
        p *= 10
    return out[::-1] or [0]


def add(a, b):
    """'a + b = ... = r' with b added one place at a time; (text, r)."""
    if a < b and a >= 10:
        a, b = b, a
    parts = places(b)
    if len(parts) == 1 or a < 10:
        return f"{a} + {b} = {a + b}", a + b
    chain = [f"{a} + " + " + ".join(map(str, parts))]
    acc = a
    for k in range(len(parts)):
        acc += parts[k]
        rest = parts[k + 1:]
        chain.append(" + ".join([str(acc)] + [str(x) for x in rest]))
    return f"{a} + {b} = " + " = ".join(chain), a + b


def sub(a, b):
    parts = places(b)
    if len(parts) == 1:
        return f"{a} - {b} = {a - b}", a - b
    chain = [f"{a} - " + " - ".join(map(str, parts))]
    acc = a
    for k in range(len(parts)):
        acc -= parts[k]
        rest = parts[k + 1:]
        chain.append(" - ".join([str(acc)] + [str(x) for x in rest]))
    return f"{a} - {b} = " + " = ".join(chain), a - b


def mul(a, b):
    """The larger factor split by place value: 47 × 8 = 40 × 8 + 7 × 8 = 320 + 56 = 376."""
    big, small = (a, b) if a >= b else (b, a)
    parts = places(big)
    if len(parts) == 1:
        return f"{a} × {b} = {a * b}", a * b
    prods = [p * small for p in parts]
    terms = [f"{p} × {small}" if a >= b else f"{small} × {p}" for p in parts]  # the question's order
    s = f"{a} × {b} = " + " + ".join(terms) + " = " + " + ".join(map(str, prods))
    if len(prods) > 2:
        acc = prods[0] + prods[1]
        s += " = " + " + ".join([str(acc)] + [str(x) for x in prods[2:]])
        for k in range(2, len(prods) - 1):
            acc += prods[k]
            s += " = " + " + ".join([str(acc)] + [str(x) for x in prods[k + 1:]])
    return s + f" = {a * b}", a * b


def div(a, b, lang="en"):
    """Long division of a by b (b <= 99): the quotient's places one at a time; exact or with a remainder
    turned into a decimal when b divides a power of ten's multiple (4, 5, 8, ...). (text, value)."""
    q, r = divmod(a, b)
    colon, comma, semi = (": ", ", ", "; ") if lang == "en" else ("：", "，", "；")
    if b in (10, 100) and not r:  # a zero or two dropped
        return f"{a} ÷ {b} = {q}", q
    if a < 10 * b:
        text = f"{a} ÷ {b} = {q}" + (f"{comma}{b} × {q} = {b * q}" if q else "")
        if r:
            text = f"{a} ÷ {b}{colon}{b} × {q} = {b * q}{comma}{a} - {b * q} = {r}" if q else f"{a} ÷ {b}{colon}{b} × 0 = 0"
    else:
        steps, rest = [], a
        for p in places(q):
            steps.append(f"{b} × {p} = {b * p}{comma}{rest} - {b * p} = {rest - b * p}")
            rest -= b * p
        text = f"{a} ÷ {b}{colon}" + semi.join(steps)
        if not r:
            text += f"{semi}{' + '.join(map(str, places(q)))} = {q}" if len(places(q)) > 1 else ""
    if not r:
        if a >= 10 * b:
            text += f", so {a} ÷ {b} = {q}" if lang == "en" else f"，所以 {a} ÷ {b} = {q}"
        return text, q
    val = a / b
    dec = f"{val:.10g}"
    rem = f"{r} ÷ {b} = {r / b:.10g}"
    if lang == "en":
        text += f"{semi}the remainder {r} gives {rem}, so {a} ÷ {b} = {dec}"
    else:
        text += f"；余数 {r}，{rem}，所以 {a} ÷ {b} = {dec}"
    return text, (int(val) if val == int(val) else float(dec))


def fmt(v):
    return str(v) if not isinstance(v, float) else f"{v:.10g}"


# ---------------------------------------------------------------- word problems
def _pick(rng, lang):
    n, m = rng.sample(EN_NAMES if lang == "en" else ZH_NAMES, 2)
    it, u = (rng.choice(EN_ITEMS), "") if lang == "en" else rng.choice(ZH_ITEMS)
    return n, m, it, u


class Place:
    """The place-value forms above, in the interface of column_math.Column."""

    def __init__(self, lang):
        self.lang = lang
        self.add, self.sub, self.mul = add, sub, mul

    def div(self, a, b):
        return div(a, b, self.lang)

    def sub_any(self, a, b):
        return sub(a, b) if isinstance(b, int) else (f"{a} - {fmt(b)} = {fmt(a - b)}", a - b)


class ColumnOps(C.Column):
    def sub_any(self, a, b):
        return self.sub(a, Fraction(fmt(b)))


FORMS = {"place": Place, "column": ColumnOps}


def problem(rng, lang, form="column"):
    """(question, worked answer) of one of 22 kinds (the eval's 12 first) with random numbers, the
    arithmetic in FORMS[form]."""
    o = FORMS[form](lang)
    kind = rng.randrange(22)
    n, m, it, u = _pick(rng, lang)
    en = lang == "en"
    A = lambda: rng.randint(2, 99)  # noqa: E731
    if kind == 0:
        a, b = A(), rng.randint(2, 60)
        w, s = o.add(a, b)
        q = rng.choice([f"{n} has {a} {it} and buys {b} more. How many {it} does {n} have now?",
                        f"{n} had {a} {it}. {m} gave {n} {b} more. How many {it} does {n} have?",
                        f"There are {a} {it} in a basket and {n} puts in {b} more. How many are in the basket?"]) if en else \
            rng.choice([f"{n}有{a}{u}{it}，又买了{b}{u}。{n}现在一共有多少{u}{it}？",
                        f"{n}原来有{a}{u}{it}，{m}又给了{n}{b}{u}。{n}现在有多少{u}？",
                        f"篮子里有{a}{u}{it}，{n}又放进去{b}{u}。篮子里现在有多少{u}？"])
        return q, (f"Add the two amounts: {w}.\nThe answer is {s}." if en else f"把两个数相加：{w}。\n答案是{s}{u}。")
    if kind == 1:
        b = rng.randint(2, 60)
        a = A() + b
        w, d = o.sub(a, b)
        q = rng.choice([f"{n} had {a} {it} and gave {b} to {m}. How many {it} are left?",
                        f"{n} has {a} {it} and uses {b} of them. How many {it} remain?"]) if en else \
            rng.choice([f"{n}有{a}{u}{it}，送给{m}{b}{u}后，还剩多少{u}？", f"{n}有{a}{u}{it}，用掉了{b}{u}，还剩多少{u}？"])
        return q, (f"Take {b} away from {a}: {w}.\nThe answer is {d}." if en else f"从{a}{u}中去掉{b}{u}：{w}。\n答案是{d}{u}。")
    if kind == 2:
        c, b = rng.randint(2, 12), rng.randint(2, 60)
        w, p = o.mul(b, c)
        q = (f"A box holds {c} {it}. How many {it} are in {b} boxes?" if en else f"每个盒子装{c}{u}{it}，{b}个盒子一共装多少{u}？")
        return q, (f"{b} boxes of {c} each: {w}.\nThe answer is {p}." if en else f"{b}盒，每盒{c}{u}：{w}。\n答案是{p}{u}。")
    if kind == 3:
        c, b = rng.randint(2, 12), rng.randint(2, 60)
        tot = b * c
        w, v = o.div(tot, c)
        q = (f"{n} shares {tot} {it} equally among {c} friends. How many does each friend get?" if en
             else f"{n}把{tot}{u}{it}平均分给{c}个朋友，每人分到多少{u}？")
        return q, (f"Divide {tot} by {c}. {w}.\nThe answer is {v}." if en else f"用{tot}除以{c}。{w}。\n答案是{v}{u}。")
    if kind == 4:
        p, c = rng.randint(2, 40), rng.randint(2, 12)
        cost = p * c
        bill = (cost // 50 + 1) * 50
        w1, _ = o.mul(c, p)
        w2, ch = o.sub(bill, cost)
        if en:
            return (f"A notebook costs ${p}. {n} buys {c} notebooks and pays with a ${bill} bill. How much change does {n} get?",
                    f"The notebooks cost {w1} dollars.\nThe change is {w2} dollars.\nThe answer is {ch}.")
        return (f"一本笔记本{p}元，{n}买了{c}本，付了{bill}元，应找回多少元？",
                f"笔记本共花费 {w1} 元。\n找回 {w2} 元。\n答案是{ch}元。")
    if kind == 5:
        ln, wd = rng.randint(3, 40), rng.randint(2, 30)
        w1, area = o.mul(ln, wd)
        w2, lw = o.add(ln, wd)
        w3, per = o.mul(2, lw)
        if en:
            return (f"A rectangle is {ln} m long and {wd} m wide. What are its area and perimeter?",
                    f"Area = {w1} square meters.\nPerimeter = 2 × ({ln} + {wd}): {w2}, {w3} meters.\n"
                    f"The answer is area {area} m², perimeter {per} m.")
        return (f"一个长方形长{ln}米，宽{wd}米，它的面积和周长各是多少？",
                f"面积 = {w1} 平方米。\n周长 = 2 × ({ln} + {wd})：{w2}，{w3} 米。\n答案是面积{area}平方米，周长{per}米。")
    if kind == 6:
        s, h = rng.randint(20, 120), rng.randint(2, 9)
        w, d = o.mul(s, h)
        if en:
            return (rng.choice([f"A train travels at {s} km/h for {h} hours. How far does it go?",
                                f"A car drives {h} hours at {s} km/h. How many kilometers does it cover?"]),
                    f"Distance = speed × time: {w} km.\nThe answer is {d} km.")
        return (rng.choice([f"一列火车每小时行驶{s}千米，{h}小时行驶多少千米？", f"一辆汽车以每小时{s}千米的速度行驶了{h}小时，一共行驶多少千米？"]),
                f"路程 = 速度 × 时间：{w} 千米。\n答案是{d}千米。")
    if kind == 7:
        if en:
            pct = rng.choice([10, 20, 25, 30, 40, 50, 75])
            price = rng.randint(2, 60) * 4
            w1, t = o.mul(price, pct)
            w2, off = o.div(t, 100)
            w3, sale = o.sub_any(price, off)
            return (f"A jacket costs ${price}. It is on sale for {pct}% off. What is the sale price?",
                    f"The discount is {pct}% of {price}: {w1}, {w2} dollars.\nThe sale price is {w3} dollars.\n"
                    f"The answer is {fmt(sale)}.")
        zhe = rng.choice([9, 8, 7, 6, 5])
        price = rng.randint(2, 60) * 10
        w1, t = o.mul(price, zhe)
        w2, sale = o.div(t, 10)
        return (f"一件外套原价{price}元，现在打{zhe}折，现价是多少元？",
                f"打{zhe}折就是原价的{zhe * 10}%：{w1}，{w2}。\n答案是{fmt(sale)}元。")
    if kind == 8:
        c, b, x = rng.randint(2, 12), rng.randint(2, 60), rng.randint(1, 30)
        rhs = c * x + b
        w1, cx = o.sub(rhs, b)
        w2, xv = o.div(cx, c)
        if en:
            return (f"Solve for x: {c}x + {b} = {rhs}.",
                    f"Subtract {b} from both sides: {c}x = {w1}.\nDivide by {c}: {w2}.\nThe answer is x = {xv}.")
        return (f"解方程：{c}x + {b} = {rhs}。",
                f"两边同时减去{b}：{c}x = {w1}。\n两边同时除以{c}：{w2}。\n答案是 x = {xv}。")
    if kind == 9:
        ages, c, y = rng.randint(5, 44), rng.randint(2, 12), rng.randint(1, 20)
        w1, now = o.add(ages, c)
        w2, later = o.add(now, y)
        if en:
            return (f"{n} is {ages} years old. {m} is {c} years older than {n}. How old will {m} be in {y} years?",
                    f"{m} is {w1} years old now.\nIn {y} years {m} will be {w2}.\nThe answer is {later}.")
        return (f"{n}今年{ages}岁，{m}比{n}大{c}岁。{y}年后{m}多少岁？",
                f"{m}今年 {w1} 岁。\n{y}年后是 {w2} 岁。\n答案是{later}岁。")
    if kind in (10, 11):
        k = [rng.randint(1, 99) for _ in range(4 if kind == 11 else rng.randint(3, 5))]
        lines, acc = [], k[0]
        for x in k[1:]:
            w, acc = o.add(acc, x)
            lines.append(w)
        if kind == 10:
            if en:
                return (f"What is the sum of {', '.join(map(str, k[:-1]))} and {k[-1]}?",
                        "Add them one at a time:\n" + "\n".join(lines) + f"\nThe answer is {acc}.")
            return (f"计算 {'、'.join(map(str, k))} 的和。", "逐个相加：\n" + "\n".join(lines) + f"\n答案是{acc}。")
        w, avg = o.div(acc, 4)
        if en:
            return (f"{n}'s test scores are {k[0]}, {k[1]}, {k[2]} and {k[3]}. What is the average score?",
                    "The total:\n" + "\n".join(lines) + f"\nThe average is the total divided by 4: {w}.\nThe answer is {fmt(avg)}.")
        return (f"{n}四次考试的成绩分别是{k[0]}、{k[1]}、{k[2]}和{k[3]}分，平均分是多少？",
                "总分：\n" + "\n".join(lines) + f"\n平均分是总分除以4：{w}。\n答案是{fmt(avg)}分。")
    return extra_problem(o, rng, lang, kind - 12, n, m, it, u)


def extra_problem(o, rng, lang, kind, n, m, it, u):
    """Ten more kinds: two-step stories, unit price, time, comparison, fractions, perimeters."""
    en = lang == "en"
    if kind == 0:  # buy then give away
        a, b, c = rng.randint(10, 90), rng.randint(2, 40), rng.randint(2, 30)
        w1, s = o.add(a, b)
        if isinstance(o, ColumnOps):  # the place form let c pass s (a negative answer); kept as it was
            c = min(c, s)
        w2, r = o.sub(s, c)
        if en:
            return (f"{n} has {a} {it}, buys {b} more and then gives {c} to {m}. How many {it} does {n} have now?",
                    f"After buying: {w1}.\nAfter giving {c} away: {w2}.\nThe answer is {r}.")
        return (f"{n}有{a}{u}{it}，又买了{b}{u}，然后送给{m}{c}{u}。{n}现在有多少{u}？",
                f"买了以后：{w1}。\n送出{c}{u}以后：{w2}。\n答案是{r}{u}。")
    if kind == 1:  # unit price
        c, p = rng.randint(2, 12), rng.randint(2, 50)
        tot = c * p
        w, v = o.div(tot, c)
        if en:
            return (f"{c} {it} cost ${tot} in all. How much does one cost?",
                    f"Divide the total by the number of {it}: {w}.\nThe answer is {v} dollars.")
        return (f"{c}{u}{it}一共{tot}元，一{u}多少元？", f"用总价除以数量：{w}。\n答案是{v}元。")
    if kind == 2:  # minutes
        h, mm = rng.randint(1, 9), rng.randint(1, 59)
        w1, t = o.mul(h, 60)
        w2, s = o.add(t, mm)
        if en:
            return (f"How many minutes are in {h} hours and {mm} minutes?",
                    f"{h} hours are {w1} minutes.\nAdd {mm}: {w2}.\nThe answer is {s} minutes.")
        return (f"{h}小时{mm}分钟一共是多少分钟？", f"{h}小时是 {w1} 分钟。\n再加{mm}分钟：{w2}。\n答案是{s}分钟。")
    if kind == 3:  # how many more
        a, b = rng.randint(20, 99), rng.randint(2, 60)
        a = max(a, b + 1)
        w, d = o.sub(a, b)
        if en:
            return (f"{n} has {a} {it} and {m} has {b}. How many more {it} does {n} have than {m}?",
                    f"Subtract the smaller amount: {w}.\nThe answer is {d}.")
        return (f"{n}有{a}{u}{it}，{m}有{b}{u}。{n}比{m}多多少{u}？", f"用大数减去小数：{w}。\n答案是{d}{u}。")
    if kind == 4:  # fraction of an amount
        den = rng.choice([2, 3, 4, 5, 10])
        num = rng.randint(1, den - 1)
        tot = den * rng.randint(2, 20)
        w1, part = o.div(tot, den)
        w2, v = o.mul(part, num)
        if en:
            return (f"{n} has {tot} {it} and gives away {num}/{den} of them. How many {it} is that?",
                    f"One part is {w1}.\n{num} parts are {w2}.\nThe answer is {v}.")
        return (f"{n}有{tot}{u}{it}，送出其中的{den}分之{num}。送出了多少{u}？",
                f"每一份是 {w1}。\n{num}份是 {w2}。\n答案是{v}{u}。")
    if kind == 5:  # square perimeter
        s = rng.randint(2, 60)
        w, p = o.mul(s, 4)
        if en:
            return (f"A square has sides of {s} cm. What is its perimeter?", f"Perimeter = 4 × side: {w} cm.\nThe answer is {p} cm.")
        return (f"一个正方形的边长是{s}厘米，它的周长是多少厘米？", f"周长 = 4 × 边长：{w} 厘米。\n答案是{p}厘米。")
    if kind == 6:  # rows of seats
        r, c = rng.randint(2, 30), rng.randint(2, 12)
        extra = rng.randint(1, 20)
        w1, p = o.mul(r, c)
        w2, s = o.add(p, extra)
        if en:
            return (f"A hall has {r} rows of {c} seats and {extra} extra chairs. How many seats are there in all?",
                    f"The rows hold {w1} seats.\nWith the extra chairs: {w2}.\nThe answer is {s}.")
        return (f"礼堂有{r}排座位，每排{c}个，另外还有{extra}把椅子。一共有多少个座位？",
                f"各排共有 {w1} 个座位。\n加上另外的椅子：{w2}。\n答案是{s}个。")
    if kind == 7:  # saving per week
        per, wk = rng.randint(2, 40), rng.randint(2, 12)
        start = rng.randint(0, 50)
        w1, p = o.mul(per, wk)
        w2, s = o.add(start, p) if start else (f"0 + {p} = {p}", p)
        if en:
            return (f"{n} has ${start} and saves ${per} every week. How much will {n} have after {wk} weeks?",
                    f"Savings: {w1} dollars.\nTotal: {w2} dollars.\nThe answer is {s}.")
        return (f"{n}现在有{start}元，每周存{per}元。{wk}周后{n}一共有多少元？",
                f"存下的钱：{w1} 元。\n一共：{w2} 元。\n答案是{s}元。")
    if kind == 8:  # difference of products
        a, b, c = rng.randint(2, 12), rng.randint(10, 50), rng.randint(2, 9)
        w1, p1 = o.mul(a, b)
        w2, p2 = o.mul(c, b)
        hi, lo = max(p1, p2), min(p1, p2)
        w3, d = o.sub(hi, lo)
        if en:
            return (f"Pens cost ${b} a box. {n} buys {a} boxes and {m} buys {c} boxes. How much more does one of them spend?",
                    f"{n} spends {w1} dollars.\n{m} spends {w2} dollars.\nThe difference is {w3} dollars.\nThe answer is {d}.")
        return (f"每盒笔{b}元。{n}买了{a}盒，{m}买了{c}盒。两人花的钱相差多少元？",
                f"{n}花了 {w1} 元。\n{m}花了 {w2} 元。\n相差 {w3} 元。\n答案是{d}元。")
    # kind 9: bare calculation
    op = rng.randrange(4)
    if op == 0:
        a, b = rng.randint(10, 999), rng.randint(10, 999)
        w, v = o.add(a, b)
    elif op == 1:
        a, b = sorted([rng.randint(10, 999), rng.randint(10, 999)], reverse=True)
        w, v = o.sub(a, b)
    elif op == 2:
        a, b = rng.randint(10, 200), rng.randint(2, 12)
        w, v = o.mul(a, b)
    else:
        b = rng.randint(2, 12)
        a = b * rng.randint(2, 99)
        w, v = o.div(a, b)
    sym = "+-×÷"[op]
    if en:
        return (rng.choice(["Calculate", "Compute", "What is"]) + f" {a} {sym} {b}" + ("?" if rng.random() < 0.5 else "."),
                f"{w}.\nThe answer is {fmt(v)}.")
    return (rng.choice(["计算", "求"]) + f" {a} {sym} {b}" + rng.choice(["。", " 的结果。"]), f"{w}。\n答案是{fmt(v)}。")


def check(n=20000, seed=1):
    """Every 'a op b = c' the generator writes is true, in both forms (chains are checked link by
    link; a column's digits so far, in brackets, are left out)."""
    rng = random.Random(seed)
    bad = 0
    for i in range(n):
        q, a = problem(rng, "en" if i % 2 else "zh", ("place", "column")[i // 2 % 2])
        text = a.replace("，", ", ").replace("：", ": ").replace("；", "; ")
        text = re.sub(r" \([\d.]+\)", "", text)
        for line in re.split(r"[\n;,]", text):
            for chain in re.findall(r"[\d .+×÷()-]+(?: = [\d .+×÷()-]+)+", line):
                vals = [s.strip() for s in chain.split(" = ") if s.strip()]
                try:
                    nums = [eval(v.replace("×", "*").replace("÷", "/")) for v in vals]
                except SyntaxError:
                    continue
                if any(abs(x - nums[0]) > 1e-9 for x in nums):
                    bad += 1
                    print("BAD:", q, "|", chain)
    print(f"checked {n} problems, {bad} wrong chains")
    return bad == 0


if __name__ == "__main__" and sys.argv[1:] == ["check"]:
    rng = random.Random(3)
    for i in range(8):
        print(*problem(rng, "en" if i % 2 else "zh", ("place", "column")[i // 2 % 2]), sep="\n", end="\n\n")
    sys.exit(0 if check() else 1)
