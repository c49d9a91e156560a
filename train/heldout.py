"""Sources reserved for the held-out evaluation of long inputs, decided by name alone.

A man page, a documentation page or a package whose name falls in bucket 0 of 25 (blake2b of
"kind:name") is never trained on, in pretraining or tuning: the long-input eval items are drawn from
these alone. Deciding by name keeps the choice stable whatever the corpus's order, and the same page
in two languages (en and zh man pages, a handbook chapter and its translation) lands on the same side.
"""
import hashlib
import os
import re

BUCKETS = 25


def _key_of(kind, name):
    if kind in ("man", "page"):
        name = os.path.basename(name)
        name = re.sub(r"\.gz$", "", name)
        name = re.sub(r"\.(en|zh-cn|zh_CN|zh-CN)\.html$", ".html", name)
    return f"{kind}:{name}"


def reserved(kind, name):
    """True if the man page / documentation page / package `name` is held out for the long eval."""
    h = hashlib.blake2b(_key_of(kind, name).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(h, "little") % BUCKETS == 0
