package org.pocketflash;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * pocketflash from Java and Kotlin (Android): a model, its draft and sessions over the C library
 * through JNI (bindings/android/jni/pocketflash_jni.c, built with bindings/android/CMakeLists.txt
 * into libpocketflash_jni.so).
 *
 * <pre>
 * try (PocketFlash.Model model = new PocketFlash.Model(path);
 *      PocketFlash.Draft draft = model.loadDraft(draftPath);
 *      PocketFlash.Session s = model.session(2)) {
 *     String text = s.generate("The capital of France is", new PocketFlash.Options().draft(draft),
 *                              piece -> { System.out.print(piece); return false; });
 *     PocketFlash.Stats st = s.stats();   // tau, acceptance, decodeTokPerS, ...
 * }
 * </pre>
 *
 * Text crosses JNI as UTF-8 bytes (not JNI's modified UTF-8), so any Unicode text is exact. A failed
 * call throws PocketFlashException with the library's message. Model, Draft and Session are
 * AutoCloseable; close a model after the sessions and drafts that use it. A session is used by one
 * thread at a time; the callback runs on the calling thread, inside the call.
 */
public final class PocketFlash {
    static {
        System.loadLibrary("pocketflash_jni");
    }

    private PocketFlash() {}

    /** A library call failed; the message is the library's, status the pf_status name ("io",
     * "format", "arg", "context", "utf8", "oom", "internal", "cancelled"). */
    public static final class PocketFlashException extends RuntimeException {
        private static final long serialVersionUID = 1L;
        public final String status;

        public PocketFlashException(String message, String status) {
            super(message);
            this.status = status;
        }

        public PocketFlashException(String message) {
            this(message, "arg");
        }
    }

    /** Receives each UTF-8-complete piece of generated text; returning true stops the generation. */
    public interface TextCallback {
        boolean onText(String piece);
    }

    /** The decoding strategies (pocketflash run --spec); every one gives plain decoding's text. */
    public enum Strategy { DEFAULT, PLAIN, DFLASH, NGRAM, DEC, ADAPTIVE, HYBRID }

    /** Generation options (pf_gen_params); defaults are the library's. */
    public static final class Options {
        int maxTokens = 128, topK = 0, block = 0;
        float temp = 0f, topP = 1f;
        long seed = 0;
        boolean stopAtEot = true;
        Strategy strategy = Strategy.DEFAULT;
        Draft draft;

        public Options maxTokens(int n) { maxTokens = n; return this; }
        public Options temperature(float t) { temp = t; return this; }
        public Options topK(int k) { topK = k; return this; }
        public Options topP(float p) { topP = p; return this; }
        public Options seed(long s) { seed = s; return this; }
        public Options stopAtEot(boolean b) { stopAtEot = b; return this; }
        public Options strategy(Strategy s) { strategy = s; return this; }
        public Options block(int b) { block = b; return this; }
        public Options draft(Draft d) { draft = d; return this; }
    }

    /** pf_gen_stats of the last call. */
    public static final class Stats {
        public final int nPrompt, nGen, nReused, nCached, block;
        public final double prefillS, ttftS, decodeS, tau, acceptance;
        public final long rounds, roundTokens, drafted, accepted;
        /** drafter: the drafter ("dflash2", "ngram", "plain"); spec: the strategy that ran ("dec",
         *  "adaptive", "dflash", "ngram", "plain") */
        public final String drafter, spec, stop;
        /** decode tokens per second as pocketflash run prints it: (nGen - 1) / decodeS */
        public final double decodeTokPerS;

        Stats(double[] v, String[] names) {
            nPrompt = (int) v[0]; nGen = (int) v[1]; nReused = (int) v[2]; nCached = (int) v[3];
            prefillS = v[4]; ttftS = v[5]; decodeS = v[6];
            stop = new String[] {"eot", "length", "context", "callback"}[(int) v[7]];
            block = (int) v[8]; rounds = (long) v[9]; roundTokens = (long) v[10];
            drafted = (long) v[11]; accepted = (long) v[12]; tau = v[13]; acceptance = v[14];
            drafter = names[0];
            spec = names[1];
            decodeTokPerS = decodeS > 0 && nGen > 1 ? (nGen - 1) / decodeS : 0;
        }

        @Override
        public String toString() {
            return String.format("Stats(nGen=%d, spec=%s, drafter=%s, block=%d, tau=%.2f, acceptance=%.2f, %.1f tok/s)",
                                 nGen, spec, drafter, block, tau, acceptance, decodeTokPerS);
        }
    }

    private static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    private abstract static class Handle implements AutoCloseable {
        long h;

        long handle() {
            if (h == 0) throw new PocketFlashException(getClass().getSimpleName() + " is closed");
            return h;
        }

        public boolean isClosed() { return h == 0; }

        @Override
        public abstract void close(); // frees the native object; throws nothing
    }

    /** A target model (GGUF or .pfb bundle); read-only, shared by its drafts and sessions. */
    public static final class Model extends Handle {
        public Model(String path) { this(path, null, null, null); }

        /**
         * pf_load_model_with: the most capable kernel level to use ("scalar", "avx2", ...; null: PF_KERNELS,
         * else the CPU's best), packed copies of the quantized matrices and huge pages for them (null: on
         * unless PF_REPACK=0 / PF_HUGEPAGES=0). A bad value throws with status "arg".
         */
        public Model(String path, String kernels, Boolean repack, Boolean hugepages) {
            h = nativeLoadModel(utf8(path), utf8(kernels), toggle(repack), toggle(hugepages));
        }

        private static int toggle(Boolean on) { return on == null ? 0 : on ? 1 : -1; }

        /** A DFlash / DFlash2 draft for this model; null: the draft inside its .pfb bundle. */
        public Draft loadDraft(String path) { return new Draft(this, path); }

        public Session session(int threads) { return new Session(this, threads, 0); }

        @Override
        public void close() {
            if (h != 0) nativeFreeModel(h);
            h = 0;
        }
    }

    public static final class Draft extends Handle {
        public final int blockSize;

        Draft(Model m, String path) {
            h = nativeLoadDraft(m.handle(), utf8(path));
            blockSize = nativeDraftBlockSize(h);
        }

        @Override
        public void close() {
            if (h != 0) nativeFreeDraft(h);
            h = 0;
        }
    }

    /** One conversation's KV cache and worker threads. */
    public static final class Session extends Handle {
        private Stats stats;

        public Session(Model m, int threads, long nCtx) { h = nativeSessionNew(m.handle(), threads, nCtx); }

        public Stats stats() { return stats; }

        public void reset() { nativeSessionReset(handle()); }

        /** The text generated after prompt (pocketflash run -p), streamed to cb (may be null). */
        public String generate(String prompt, Options o, TextCallback cb) {
            return run(utf8(prompt), null, null, o, cb, false);
        }

        /** generate with the model's chat template around prompt (pocketflash run --chat). */
        public String generateChat(String prompt, Options o, TextCallback cb) {
            return run(utf8(prompt), null, null, o, cb, true);
        }

        /** The assistant's reply to the conversation: roles "system", "user", "assistant". */
        public String chat(List<String> roles, List<String> contents, Options o, TextCallback cb) {
            byte[][] r = new byte[roles.size()][], c = new byte[contents.size()][];
            for (int i = 0; i < r.length; i++) r[i] = utf8(roles.get(i));
            for (int i = 0; i < c.length; i++) c[i] = utf8(contents.get(i));
            return run(null, r, c, o, cb, false);
        }

        private String run(byte[] prompt, byte[][] roles, byte[][] contents, Options o, TextCallback cb, boolean chat) {
            if (o == null) o = new Options();
            Sink sink = new Sink(cb);
            double[] st = new double[15];
            String[] names = new String[2];
            int[] ip = {o.maxTokens, o.strategy.ordinal(), o.block, o.topK, chat ? 1 : 0, o.stopAtEot ? 1 : 0};
            float[] fp = {o.temp, o.topP};
            nativeGenerate(handle(), prompt, roles, contents, ip, fp, o.draft == null ? 0 : o.draft.handle(), o.seed, sink,
                     st, names);
            stats = new Stats(st, names);
            return sink.text.toString();
        }

        @Override
        public void close() {
            if (h != 0) nativeSessionFree(h);
            h = 0;
        }
    }

    /** Called from C with each piece's UTF-8 bytes. */
    static final class Sink {
        final StringBuilder text = new StringBuilder();
        final TextCallback cb;

        Sink(TextCallback cb) { this.cb = cb; }

        boolean onBytes(byte[] b) {
            String piece = new String(b, StandardCharsets.UTF_8);
            text.append(piece);
            return cb != null && cb.onText(piece);
        }
    }

    private static native long nativeLoadModel(byte[] path, byte[] kernels, int repack, int hugepages);
    private static native void nativeFreeModel(long model);
    private static native long nativeLoadDraft(long model, byte[] path);
    private static native void nativeFreeDraft(long draft);
    private static native int nativeDraftBlockSize(long draft);
    private static native long nativeSessionNew(long model, int threads, long nCtx);
    private static native void nativeSessionFree(long session);
    private static native void nativeSessionReset(long session);
    private static native void nativeGenerate(long session, byte[] prompt, byte[][] roles, byte[][] contents, int[] ip,
                                        float[] fp, long draft, long seed, Sink sink, double[] stats, String[] names);
}
