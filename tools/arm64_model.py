#!/usr/bin/env python3
"""Per-core performance model of the ARM64 quantized gemm (make arm64-model -> docs/arm64-model.md).

For each level (neon, dotprod, i8mm on the GGUF layout, i8mm on its packed layout), weight type and
activation rows per pass nb, tools/arm64_model_loop.c is compiled to assembly with the cross
compiler and the level's flags (-O2 -ffp-contract=off, as the build), the loop over the weight
blocks (one block of 32 weights of 4 rows against nb activation rows: 128 * nb multiply-adds, float
part, loads and loop included) is cut out, and llvm-mca runs it with a core's scheduling model:
cycles per iteration in the steady state (dependencies across iterations included). From cycles per
multiply-add, a clock, a core count and a memory bandwidth (assumptions, stated in the output) it
predicts the decode rate and c(B) = t(B rows) / t(1 row) for the Pocket-shape model, whose shape is
read from engine/synth.c. Roofline: a forward takes max(compute, weight bytes / bandwidth);
attention, norms and the thread pool are left out (small at short context).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOOP_SRC = "tools/arm64_model_loop.c"

# (name in the table, level file, -march flags, packed layout)
LEVELS = [
    ("neon", "neon", "", 0),
    ("dotprod", "dotprod", "-march=armv8.2-a+dotprod", 0),
    ("i8mm", "i8mm", "-march=armv8.2-a+dotprod+i8mm", 0),
    ("i8mm packed", "i8mm", "-march=armv8.2-a+dotprod+i8mm", 1),
]
# llvm-mca -mcpu, and what it stands for
CPUS = [
    ("neoverse-n2", "Neoverse N2 model: Cortex-A710 / A715 / A720 class (phone performance cores)"),
    ("neoverse-v1", "Neoverse V1 model: Cortex-X1 class"),
    ("neoverse-v2", "Neoverse V2 model: Cortex-X3 / X4 class (LLVM also gives it to cortex-x925)"),
    ("apple-m1", "LLVM's only Apple model (Cyclone, 2013-era widths and latencies): a rough proxy"),
]
TYPES = [("Q4_1", "PF_TYPE_Q4_1", 20), ("Q8_0", "PF_TYPE_Q8_0", 34)]  # bytes per 32 weights
BS = [1, 4, 8, 16]


def run(cmd, **kw):
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit("%s failed:\n%s" % (" ".join(cmd), r.stderr))
    return r.stdout


def rows_per_pass(level, packed):
    """QNB / PQNB from the level's source: activation rows one pass over a row group handles."""
    src = open(os.path.join(ROOT, "kernels/arm/kernels_%s.c" % level)).read()
    m = re.search(r"#define\s+%s\s+(\d+)" % ("PQNB" if packed else "QNB"), src)
    return int(m.group(1))


def pocket_shape():
    src = open(os.path.join(ROOT, "engine/synth.c")).read()
    m = re.search(r'\{"pocket",\s*([\d,\s]+)\}', src)
    v = [int(t) for t in m.group(1).split(",")]
    keys = ["n_layer", "n_embd", "n_ff", "n_head", "n_kv_head", "head_dim", "n_vocab", "n_ctx"]
    return dict(zip(keys, v))


def loop_asm(cc, level, flags, packed, wt, nb, tmp):
    out = os.path.join(tmp, "loop.s")
    cmd = [cc, "-std=c11", "-D_GNU_SOURCE", "-O2", "-ffp-contract=off", "-I.", "-Iinclude",
           '-DPF_MODEL_LEVEL="kernels/arm/kernels_%s.c"' % level, "-DPF_MODEL_WT=" + wt,
           "-DPF_MODEL_NB=%d" % nb, "-DPF_MODEL_PACKED=%d" % packed, "-S", LOOP_SRC, "-o", out]
    if flags:
        cmd.insert(1, flags)
    run(cmd)
    lines = open(out).read().split("\n")
    a = lines.index("pf_model_loop:")
    body = [l for l in lines[a:] if not re.match(r"\s*\.(loc|cfi|p2align|align)\b", l)]
    end = next(i for i, l in enumerate(body) if l.startswith("\t.size\tpf_model_loop"))
    body = body[:end]
    labels = {l[:-1]: i for i, l in enumerate(body) if re.match(r"^\.L\w+:$", l)}
    loops = []  # (start, end) of each backward branch
    for i, l in enumerate(body):
        m = re.match(r"\s*(b[a-z.]*|cbn?z|tbn?z)\s.*?(\.L\w+)\s*$", l)
        if m and m.group(2) in labels and labels[m.group(2)] < i:
            loops.append((labels[m.group(2)], i))
    if len(loops) != 1:
        sys.exit("%s nb=%d packed=%d: expected one loop in pf_model_loop, found %d" % (level, nb, packed, len(loops)))
    s, e = loops[0]
    return "\n".join(body[s:e + 1]) + "\n"


def mca_model_name(mca, cpu, tmp):
    """The scheduling model llvm-mca really uses for cpu, from its resource names (LLVM 14, for
    one, gives neoverse-n2 / v1 the Cortex-A57 model: A57Unit*)."""
    path = os.path.join(tmp, "probe.s")
    open(path, "w").write("smmla v0.4s, v1.16b, v2.16b\n")
    out = run([mca, "-mtriple=aarch64", "-mcpu=" + cpu, "-mattr=+i8mm", "-iterations=1", path])
    m = re.search(r"Resources:\n\[[\d.]+\]\s+-\s+(\w+)", out)
    return re.sub(r"Unit.*", "", m.group(1)) if m else "none"


def mca_cycles(mca, cpu, asm, tmp):
    path = os.path.join(tmp, "loop_body.s")
    open(path, "w").write(asm)
    it = 400
    out = run([mca, "-mtriple=aarch64", "-mcpu=" + cpu, "-mattr=+neon,+fullfp16,+dotprod,+i8mm",
               "-iterations=%d" % it, path])
    cyc = int(re.search(r"Total Cycles:\s+(\d+)", out).group(1))
    n = int(re.search(r"Instructions:\s+(\d+)", out).group(1)) // it
    return cyc / it, n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cc", default="aarch64-linux-gnu-gcc")
    ap.add_argument("--mca", default="llvm-mca")
    ap.add_argument("--ghz", type=float, default=3.3, help="core clock (assumption)")
    ap.add_argument("--gbs", type=float, default=60.0, help="memory bandwidth, GB/s (assumption)")
    ap.add_argument("--out", default="docs/arm64-model.md")
    a = ap.parse_args()
    mca_version = run([a.mca, "--version"]).strip().split("\n")
    mca_version = next((l.strip() for l in mca_version if "version" in l.lower()), mca_version[0])
    cc_version = run([a.cc, "--version"]).split("\n")[0]
    sh = pocket_shape()
    H, F, L, V = sh["n_embd"], sh["n_ff"], sh["n_layer"], sh["n_vocab"]
    q, kv = sh["n_head"] * sh["head_dim"], sh["n_kv_head"] * sh["head_dim"]
    weights = L * (H * q + 2 * H * kv + q * H + 3 * H * F) + V * H

    # cycles per block iteration: cyc[(name, type, nb, cpu)], instruction counts ins[(name, type, nb)]
    cyc, ins, qnb, used = {}, {}, {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for cpu, _ in CPUS:
            used[cpu] = mca_model_name(a.mca, cpu, tmp)
        for name, level, flags, packed in LEVELS:
            qnb[name] = rows_per_pass(level, packed)
            for tname, wt, _ in TYPES:
                for nb in range(1, qnb[name] + 1):
                    asm = loop_asm(a.cc, level, flags, packed, wt, nb, tmp)
                    for cpu, _ in CPUS:
                        cyc[(name, tname, nb, cpu)], ins[(name, tname, nb)] = mca_cycles(a.mca, cpu, asm, tmp)

    def cycles_b(name, tname, B, cpu):
        """cycles per block of 4 weight rows for B activation rows: passes of qnb rows, then the rest"""
        full, rest = divmod(B, qnb[name])
        c = full * cyc[(name, tname, qnb[name], cpu)]
        if rest:
            c += cyc[(name, tname, rest, cpu)]
        return c

    def cpm(name, tname, B, cpu):
        return cycles_b(name, tname, B, cpu) / (128.0 * B)

    def forward_s(name, tname, B, cpu, cores, bpw):
        compute = weights * B * cpm(name, tname, B, cpu) / (a.ghz * 1e9 * cores)
        memory = weights * bpw / 32.0 / (a.gbs * 1e9)
        return max(compute, memory), compute, memory

    o = []
    o.append("# ARM64 performance model (generated by `make arm64-model`; do not edit)\n")
    o.append("Cycles of the quantized gemm's inner loops from `llvm-mca` scheduling models, and what they predict")
    o.append("for the Pocket-shape model on a phone. A model, not a measurement: no ARM hardware was run.")
    o.append("Method and assumptions are in docs/arm64.md (\"Performance model\"); tools/arm64_model.py makes this file.\n")
    o.append("- Compiler: `%s`, `-O2 -ffp-contract=off` and each level's `-march`." % cc_version)
    o.append("- llvm-mca: %s (`%s`)." % (mca_version, os.path.basename(a.mca)))
    for cpu, what in CPUS:
        o.append("- `-mcpu=%s`: %s (resources `%sUnit*`)." % (cpu, what, used[cpu]))
    o.append("- Model (engine/synth.c `pocket`): %d layers, hidden %d, FFN %d, %d/%d heads of %d, vocab %d: "
             "%.1f M weights in matmuls (output head included); Q4_1 %.1f MB, Q8_0 %.1f MB read per forward."
             % (L, H, F, sh["n_head"], sh["n_kv_head"], sh["head_dim"], V, weights / 1e6,
                weights * 20 / 32 / 1e6, weights * 34 / 32 / 1e6))
    o.append("- Assumptions: clock **%.1f GHz** on every core model; memory bandwidth **%.0f GB/s** "
             "(LPDDR5X, whole chip, reached by any core count); a forward takes max(compute, weight bytes / "
             "bandwidth); attention, norms, quantization of activations and thread sync left out."
             % (a.ghz, a.gbs))
    o.append("- Rows per pass over a group of 4 weight rows: %s (B = 16 is passes of that size).\n"
             % ", ".join("%s %d" % (n, qnb[n]) for n, *_ in LEVELS))

    best = LEVELS[-1][0]
    o.append("## Summary: %s, Pocket-shape Q4_1, beside MNN's 251 tok/s (Snapdragon 8 Gen 5 CPU)\n" % best)
    o.append("| core model | 1 core: decode tok/s | c(4) | c(8) | c(16) | cores to the %.0f GB/s ceiling | "
             "4 cores: decode tok/s | c(4) | c(8) | c(16) |" % a.gbs)
    o.append("|---|---|---|---|---|---|---|---|---|---|")
    for cpu, _ in CPUS:
        cells = []
        for cores in (1, 4):
            t1 = forward_s(best, "Q4_1", 1, cpu, cores, 20)[0]
            cells.append("%.0f" % (1 / t1))
            cells += ["%.2f" % (forward_s(best, "Q4_1", B, cpu, cores, 20)[0] / t1) for B in (4, 8, 16)]
            if cores == 1:
                _, c, m = forward_s(best, "Q4_1", 1, cpu, 1, 20)
                cells.append("%.1f" % (c / m))
        o.append("| %s | %s |" % (cpu, " | ".join(cells)))
    o.append("")
    o.append("c(n) for every row count, one core (compute-bound), %s Q4_1 (an odd n pairs its last row "
             "with itself in SMMLA):\n" % best)
    o.append("| core model | " + " | ".join("%d" % n for n in range(2, 17)) + " |")
    o.append("|---|" + "---|" * 15)
    for cpu, _ in CPUS:
        t1 = forward_s(best, "Q4_1", 1, cpu, 1, 20)[0]
        o.append("| %s | %s |" % (cpu, " | ".join("%.2f" % (forward_s(best, "Q4_1", n, cpu, 1, 20)[0] / t1)
                                                 for n in range(2, 17))))
    o.append("")
    o.append("## Cycles per multiply-add (instructions per block iteration in brackets)\n")
    for tname, _, _ in TYPES:
        o.append("### %s\n" % tname)
        o.append("| level | core model | B = 1 | B = 4 | B = 8 |")
        o.append("|---|---|---|---|---|")
        for name, *_ in LEVELS:
            for cpu, _ in CPUS:
                cells = []
                for B in (1, 4, 8):
                    nb = min(B, qnb[name])
                    cells.append("%.3f (%d)" % (cpm(name, tname, B, cpu), ins[(name, tname, nb)]))
                o.append("| %s | %s | %s |" % (name, cpu, " | ".join(cells)))
        o.append("")

    o.append("## Predicted decode and c(B), Pocket-shape Q4_1\n")
    o.append("tok/s = 1 / t(1 row); c(B) = t(B rows) / t(1 row); *bw* marks a forward bound by the %.0f GB/s, "
             "*cpu* one bound by compute. MNN reports **251 tok/s** for MNN-Pocket-0.3B on a Snapdragon 8 Gen 5 "
             "CPU (its own measurement, threads and quantization of its choosing).\n" % a.gbs)
    o.append("| level | core model | cores | decode tok/s | c(4) | c(8) | c(16) |")
    o.append("|---|---|---|---|---|---|---|")
    for name, *_ in LEVELS:
        for cpu, _ in CPUS:
            for cores in (1, 2, 4):
                t1, c1, m1 = forward_s(name, "Q4_1", 1, cpu, cores, 20)
                cs = []
                for B in (4, 8, 16):
                    tb, cb, mb = forward_s(name, "Q4_1", B, cpu, cores, 20)
                    cs.append("%.2f %s" % (tb / t1, "*cpu*" if cb > mb else "*bw*"))
                o.append("| %s | %s | %d | %.0f %s | %s |" % (name, cpu, cores, 1 / t1, "*cpu*" if c1 > m1 else "*bw*",
                                                             " | ".join(cs)))
    o.append("")
    o.append("Bandwidth ceiling: %.1f MB at %.0f GB/s = %.2f ms, %.0f tok/s. Cores needed at B = 1 to reach it "
             "(compute time = memory time), Q4_1:\n" % (weights * 20 / 32 / 1e6, a.gbs, weights * 20 / 32 / a.gbs / 1e6,
                                                         a.gbs * 1e9 / (weights * 20 / 32)))
    o.append("| level | " + " | ".join(c for c, _ in CPUS) + " |")
    o.append("|---|" + "---|" * len(CPUS))
    for name, *_ in LEVELS:
        cells = []
        for cpu, _ in CPUS:
            _, c, m = forward_s(name, "Q4_1", 1, cpu, 1, 20)
            cells.append("%.1f" % (c / m))
        o.append("| %s | %s |" % (name, " | ".join(cells)))
    o.append("")
    open(os.path.join(ROOT, a.out), "w").write("\n".join(o))
    print("wrote %s" % a.out)


if __name__ == "__main__":
    main()
