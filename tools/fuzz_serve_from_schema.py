#!/usr/bin/env python3
"""Hand the schema target's corpus to the server target: every schema in tests/fuzz/corpus/schema
(its text up to the first NUL) that parses as JSON becomes a request carrying it, alternately
llama-server's "json_schema" on /v1/completions and response_format json_schema on
/v1/chat/completions, written to OUT_DIR under the SHA-1 of its bytes.

The server compiles a request's schema with the same compiler the schema target fuzzes directly,
so without these the server target spends millions of requests finding again, through HTTP, the
schemas the schema target already has. Copy the output into tests/fuzz/corpus/serve before a long
run (tools/fuzz_long.sh); its merge keeps the requests that add coverage.

usage: tools/fuzz_serve_from_schema.py SCHEMA_CORPUS_DIR OUT_DIR
"""
import hashlib
import json
import os
import sys

MAX_BODY = 8192  # the server target's body limit (tests/fuzz/fuzz_serve.c)


def reject_constant(name):
    raise ValueError(name)  # NaN and Infinity are not JSON


def is_json(text):
    try:
        json.loads(text.decode("utf-8"), parse_constant=reject_constant)
        return True
    except ValueError:  # also UnicodeDecodeError and json's errors
        return False


def request(schema, chat):
    """The request's head and body."""
    if chat:
        body = (b'{"messages":[{"role":"user","content":"x"}],"max_tokens":16,'
                b'"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":' + schema + b'}}}')
        return b"POST /v1/chat/completions\r\n\r\n", body
    return b"POST /v1/completions\r\n\r\n", b'{"prompt":"x","max_tokens":16,"json_schema":' + schema + b"}"


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: tools/fuzz_serve_from_schema.py SCHEMA_CORPUS_DIR OUT_DIR")
    src, out = argv[1], argv[2]
    try:
        names = sorted(os.listdir(src))
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        sys.exit(f"fuzz_serve_from_schema: {e.filename}: {e.strerror}")
    written = 0
    for i, name in enumerate(names):
        with open(os.path.join(src, name), "rb") as f:
            schema = f.read().split(b"\0")[0]
        if not is_json(schema):
            continue
        head, body = request(schema, chat=i % 2 == 1)
        if len(body) > MAX_BODY:  # it would arrive cut off
            continue
        req = head + body
        with open(os.path.join(out, hashlib.sha1(req).hexdigest()), "wb") as f:
            f.write(req)
        written += 1
    print(f"{written} requests written to {out}")


if __name__ == "__main__":
    main(sys.argv)
