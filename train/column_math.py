"""Arithmetic worked in columns, one digit a step, for the math tuning examples (tune_math.py).

The place-value form (`238 - 49 = 238 - 40 - 9 = 198 - 9 = 189`) still asks the model for a
multi-digit sum at every link, and the tuned target got those links wrong (`95 + 62 = 95 + 60 + 2 =
155 + 2 = 155`). Here every step is a one-digit fact, and the digits found so far are written after
each step, so the answer is built by prepending one digit to the text just written:

  47 + 38: 7 + 8 = 15 (5), 4 + 3 + 1 = 8 (85), so 47 + 38 = 85
  238 - 49: 18 - 9 = 9 (9), 13 - 4 - 1 = 8 (89), 2 - 0 - 1 = 1 (189), so 238 - 49 = 189
  47 × 8: 7 × 8 = 56 (6), 4 × 8 = 32, 32 + 5 = 37 (376), so 47 × 8 = 376
  223 ÷ 4: 22 - 4 × 5 = 22 - 20 = 2 (5); 23 - 4 × 5 = 23 - 20 = 3 (55); 30 - 4 × 7 = ... (55.7); ...

A carry is the `+ 1` of the next column, a borrow its `1` before the top digit and `- 1` after it;
a multi-digit multiplier is one single-digit product per nonzero digit, shifted, then added in
columns; division is long division (each step takes the largest multiple of the divisor
that fits and writes the quotient digit), continued past the point while the divisor ends it (4, 8, 25).
Every function returns (text, value) and checks its value against Python's arithmetic.

  column_math.py check    print examples and check every operation on random operands
"""
import random
import sys
from fractions import Fraction

PUNCT = {"en": (": ", ", ", "; ", "so "), "zh": ("：", "，", "；", "所以 ")}


def show(v):
    """A value as the answers write it: integers bare, decimals without trailing zeros."""
    v = Fraction(v)
    if v.denominator == 1:
        return str(v.numerator)
    for k in range(1, 7):
        if (v * 10 ** k).denominator == 1:
            n = abs(v.numerator * 10 ** k // v.denominator)
            s = str(n).rjust(k + 1, "0")
            return ("-" if v < 0 else "") + s[:-k] + "." + s[-k:]
    raise ValueError(f"{v} has no short decimal")


def decimals(v):
    """How many decimal places v needs (0 for integers)."""
    v = Fraction(v)
    k = 0
    while (v * 10 ** k).denominator != 1:
        k += 1
        if k > 6:
            raise ValueError(f"{v} has no short decimal")
    return k


def padded(v, dec):
    """v with exactly dec decimal places (for the columns: 44 -> 44.0 beside 8.8)."""
    s = str(int(Fraction(v) * 10 ** dec)).rjust(dec + 1, "0")
    return s if not dec else s[:-dec] + "." + s[-dec:]


class Column:
    """The column forms in one language's punctuation."""

    def __init__(self, lang="en"):
        self.colon, self.comma, self.semi, self.so = PUNCT[lang]

    def _digits(self, v, dec):
        return [int(c) for c in padded(v, dec).replace(".", "")][::-1]

    def add(self, a, b):
        """a + b, columns from the right; a carry shows as the next column's `+ 1`."""
        if decimals(a) == decimals(b) == 0 and a < 10 and b < 10:
            return f"{a} + {b} = {a + b}", a + b
        dec = max(decimals(a), decimals(b))
        da, db = self._digits(a, dec), self._digits(b, dec)
        n = max(len(da), len(db))
        steps, part, carry = [], "", 0
        for i in range(n):
            x, y = (da[i] if i < len(da) else 0), (db[i] if i < len(db) else 0)
            s = x + y + carry
            part = (str(s) if i == n - 1 else str(s % 10)) + ("." if dec and i == dec else "") + part
            steps.append(f"{x} + {y}" + (" + 1" if carry else "") + f" = {s} ({part})")
            carry = s // 10
        r = Fraction(a) + Fraction(b)
        assert Fraction(part) == r, (a, b, part)
        head = f"{padded(a, dec)} + {padded(b, dec)}"
        return head + self.colon + self.comma.join(steps) + f"{self.comma}{self.so}{show(a)} + {show(b)} = {show(r)}", _num(r)

    def sub(self, a, b):
        """a - b (a >= b), columns from the right; a borrow writes `1` before the top digit and takes
        `- 1` from the next column."""
        assert a >= b
        if decimals(a) == decimals(b) == 0 and a < 10:
            return f"{a} - {b} = {a - b}", a - b
        dec = max(decimals(a), decimals(b))
        da, db = self._digits(a, dec), self._digits(b, dec)
        steps, part, borrow = [], "", 0
        for i in range(len(da)):
            t, d = da[i], (db[i] if i < len(db) else 0)
            v = t - d - borrow
            top = f"1{t}" if v < 0 else f"{t}"
            steps.append(f"{top} - {d}" + (" - 1" if borrow else "") + f" = {v % 10}")
            borrow = 1 if v < 0 else 0
            part = str(v % 10) + ("." if dec and i == dec else "") + part
            steps[-1] += f" ({part})"
        r = Fraction(a) - Fraction(b)
        assert Fraction(part) == r and not borrow, (a, b, part)
        head = f"{padded(a, dec)} - {padded(b, dec)}"
        return head + self.colon + self.comma.join(steps) + f"{self.comma}{self.so}{show(a)} - {show(b)} = {show(r)}", _num(r)

    def _mul_digit(self, a, d):
        """a × d for one digit d, a's digits from the right; the carry is added after each product.
        (steps, value)"""
        steps, part, carry = [], "", 0
        da = [int(c) for c in str(a)][::-1]
        for i, x in enumerate(da):
            p = x * d
            s = p + carry
            step = f"{x} × {d} = {p}" + (f"{self.comma}{p} + {carry} = {s}" if carry else "")
            part = (str(s) if i == len(da) - 1 else str(s % 10)) + part
            steps.append(step + f" ({part})")
            carry = s // 10
        assert int(part) == a * d
        return steps, a * d

    def mul(self, a, b):
        """a × b (integers). One factor a digit: its columns. Otherwise the factor with fewer nonzero
        digits multiplies: one product per nonzero digit, shifted by its place, then added."""
        if a < 10 and b < 10:
            return f"{a} × {b} = {a * b}", a * b
        head = f"{a} × {b}"
        if a < 10 or b < 10:
            big, d = (a, b) if b < 10 else (b, a)
            steps, v = self._mul_digit(big, d)
            return head + self.colon + self.comma.join(steps) + f"{self.comma}{self.so}{head} = {v}", v
        nz = lambda x: sum(c != "0" for c in str(x))  # noqa: E731
        big, small = (a, b) if (nz(b), len(str(b)), b) <= (nz(a), len(str(a)), a) else (b, a)
        parts, texts = [], []
        for place, c in enumerate(str(small)[::-1]):
            d = int(c)
            if not d:
                continue
            if d == 1:
                t = f"{big} × 1 = {big}"
            else:
                steps, _ = self._mul_digit(big, d)
                t = f"{big} × {d}" + self.colon + self.comma.join(steps) + f"{self.comma}{self.so}{big} × {d} = {big * d}"
            if place:
                t += f"{self.comma}{self.so}{big} × {d * 10 ** place} = {big * d * 10 ** place}"
            texts.append(t)
            parts.append(big * d * 10 ** place)
        acc = parts[0]
        for p in parts[1:]:
            t, acc = self.add(acc, p)
            texts.append(t)
        assert acc == a * b
        if len(parts) == 1 and str(small) == str(small)[0] + "0" * (len(str(small)) - 1) and head == f"{big} × {small}":
            return self.semi.join(texts), acc
        return head + self.colon + self.semi.join(texts) + f"{self.semi}{self.so}{head} = {acc}", acc

    def div(self, a, b):
        """a ÷ b by long division (b < 100; 10 and 100 move the point), continued past the point until
        nothing remains (at most 4 places; the caller keeps to divisors that end)."""
        if b in (10, 100):
            k = 1 if b == 10 else 2
            full = padded(Fraction(a, b), k)
            r = Fraction(a, b)
            return f"{a} ÷ {b} = {full}" + (f" = {show(r)}" if show(r) != full else ""), _num(r)
        digits = [int(c) for c in str(a)]
        steps, part, cur, i, places = [], "", 0, 0, 0
        while True:
            if i < len(digits):
                cur = cur * 10 + digits[i]
                i += 1
                if not part and cur < b and i < len(digits):
                    continue
            else:
                if not cur or places == 4:
                    break
                cur *= 10
                if not places:
                    part += "."
                places += 1
            q = cur // b
            part += str(q)
            steps.append(f"{cur} - {b} × {q} = {cur} - {b * q} = {cur - b * q} ({part})")
            cur -= b * q
            if i == len(digits) and not cur:
                break
        r = Fraction(a, b)
        assert not cur and Fraction(part) == r, (a, b, part)
        return f"{a} ÷ {b}" + self.colon + self.semi.join(steps) + f"{self.comma}{self.so}{a} ÷ {b} = {show(r)}", _num(r)


def _num(r):
    return r.numerator if r.denominator == 1 else float(show(r))


def check(n=20000, seed=1):
    """Random operands through every form; the functions assert their own values."""
    rng = random.Random(seed)
    for lang in ("en", "zh"):
        c = Column(lang)
        for _ in range(n):
            a, b = rng.randint(0, 9999), rng.randint(0, 9999)
            c.add(a, b)
            c.sub(max(a, b), min(a, b))
            c.mul(rng.randint(1, 999), rng.randint(1, 99))
            d = rng.choice([2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 25])
            c.div(d * rng.randint(1, 999), d)
            c.div(rng.randint(1, 9999), rng.choice([2, 4, 5, 8, 10, 100]))
            x = Fraction(rng.randint(0, 999), 10)
            c.sub(x + Fraction(rng.randint(0, 999)), x)
    print(f"checked {2 * n} operand sets in each form")
    return True


if __name__ == "__main__" and sys.argv[1:] == ["check"]:
    c = Column("en")
    for t in (c.add(47, 38), c.add(95, 62), c.add(1234, 5), c.sub(238, 49), c.sub(105, 98), c.sub(Fraction(44), Fraction(88, 10)),
              c.mul(47, 8), c.mul(31, 15), c.mul(27, 30), c.mul(116, 75), c.div(189, 7), c.div(223, 4), c.div(104, 4),
              c.div(132, 12), c.div(8700, 100), c.div(880, 100), c.div(3, 4), Column("zh").add(62, 95)):
        print(t[0], "->", t[1])
    sys.exit(0 if check() else 1)
