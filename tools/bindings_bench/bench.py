"""One generation through the Python binding: bench.py TARGET DRAFT PROMPT N MODE [THREADS], MODE plain,
default (the draft's default strategy) or dflash:B; prints the library's decode tok/s
((n_gen - 1) / decode_s, the clock `pocketflash run` prints), n_gen and tau."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bindings", "python"))
import pocketflash as pf

target, draft, prompt, n, mode = sys.argv[1:6]
threads = int(sys.argv[6]) if len(sys.argv) > 6 else 2
strategy, _, block = mode.partition(":")
with pf.Model(target) as m, m.load_draft(draft) as d, m.session(threads=threads) as s:
    s.generate(prompt, max_tokens=int(n), strategy=strategy, block=int(block or 0),
               draft=None if strategy == "plain" else d, stop_at_eot=False,
               on_text=lambda piece: print(piece, end="", file=sys.stderr))
    print("%.2f %d %.3f" % (s.stats.decode_tok_s, s.stats.n_gen, s.stats.tau))
