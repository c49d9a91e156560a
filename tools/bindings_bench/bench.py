"""One generation through the Python binding: bench.py TARGET DRAFT PROMPT N [plain]; prints the
library's decode tok/s ((n_gen - 1) / decode_s, the clock `pocketflash run` prints)."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bindings", "python"))
import pocketflash as pf

target, draft, prompt, n = sys.argv[1:5]
plain = len(sys.argv) > 5
with pf.Model(target) as m, m.load_draft(draft) as d, m.session(threads=2) as s:
    s.generate(prompt, max_tokens=int(n), strategy="plain" if plain else "default", draft=None if plain else d, stop_at_eot=False,
               on_text=lambda piece: print(piece, end="", file=sys.stderr))
    print("%.2f %d %.3f" % (s.stats.decode_tok_s, s.stats.n_gen, s.stats.tau))
