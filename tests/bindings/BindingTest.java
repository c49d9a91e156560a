import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.pocketflash.PocketFlash;

/**
 * The Java binding's checks, run by tests/test_bindings.c with java against this build's library:
 * BindingTest TARGET DRAFT PROMPT CHAT_PROMPT BAD_PATH OUT. Writes to OUT, NUL-separated, the
 * speculative text of PROMPT (streamed), the chat reply to CHAT_PROMPT and the message of the
 * exception a bad model path throws, for the C test to compare with the CLI's; checks of its own
 * (the load parameters: scalar kernels without packing give the same text, an unknown level
 * throws "arg") exit 1 with one line.
 */
public final class BindingTest {
    static void check(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAIL: " + what);
            System.exit(1);
        }
    }

    public static void main(String[] a) throws Exception {
        String gen, chat, bad = null;
        try (PocketFlash.Model m = new PocketFlash.Model(a[0]);
             PocketFlash.Draft d = m.loadDraft(a[1]);
             PocketFlash.Session s = m.session(1)) {
            List<String> pieces = new ArrayList<>();
            PocketFlash.Options spec = new PocketFlash.Options().maxTokens(48).draft(d);
            gen = s.generate(a[2], spec, p -> { pieces.add(p); return false; });
            check(String.join("", pieces).equals(gen) && pieces.size() > 1, "streamed pieces do not make up the text");
            PocketFlash.Stats st = s.stats();
            check(st.nGen > 1 && st.rounds > 0 && st.tau >= 1 && st.acceptance >= 0 && st.acceptance <= 1
                  && st.spec.equals("dec") && st.drafter.equals("dflash2"),
                  "speculative stats " + st);
            String plain = s.generate(a[2], new PocketFlash.Options().maxTokens(48).strategy(PocketFlash.Strategy.PLAIN), null);
            check(s.stats().rounds == 0 && s.stats().spec.equals("plain") && plain.equals(gen), "plain decoding: " + plain + " / " + s.stats());
            String stopped = s.generate(a[2], spec, p -> true);
            check(s.stats().stop.equals("callback") && gen.startsWith(stopped), "stop from the callback: " + s.stats());
            chat = s.chat(Arrays.asList("user"), Arrays.asList(a[3]), spec, null);
            try {
                s.generate(a[2], new PocketFlash.Options().strategy(PocketFlash.Strategy.DFLASH).block(1).draft(d), null);
                check(false, "block 1 did not throw");
            } catch (PocketFlash.PocketFlashException e) {
                check(e.getMessage().contains("block") && e.status.equals("arg"), "block 1: " + e.status + " " + e.getMessage());
            }
            try {
                s.generate(a[2], spec, p -> { throw new IllegalStateException("from the callback"); });
                check(false, "the callback's exception was lost");
            } catch (IllegalStateException e) {
                check(e.getMessage().equals("from the callback"), e.getMessage());
            }
        }
        try (PocketFlash.Model m = new PocketFlash.Model(a[0])) {
            PocketFlash.Session s = m.session(1);
            s.close();
            check(s.isClosed(), "closed session");
            try {
                s.generate(a[2], null, null);
                check(false, "a closed session generated");
            } catch (PocketFlash.PocketFlashException e) {
                check(e.getMessage().contains("closed"), e.getMessage());
            }
        }
        try (PocketFlash.Model m = new PocketFlash.Model(a[0], "scalar", false, false);
             PocketFlash.Session s = m.session(1)) { // the load parameters: the same greedy text
            String plain = s.generate(a[2], new PocketFlash.Options().maxTokens(48).strategy(PocketFlash.Strategy.PLAIN), null);
            check(plain.equals(gen), "scalar kernels, no packing: " + plain);
        }
        try {
            new PocketFlash.Model(a[0], "bogus", null, null);
            check(false, "an unknown kernel level did not throw");
        } catch (PocketFlash.PocketFlashException e) {
            check(e.status.equals("arg"), "an unknown kernel level: status " + e.status);
        }
        try {
            new PocketFlash.Model(a[4]);
            check(false, "a bad model path did not throw");
        } catch (PocketFlash.PocketFlashException e) {
            check(e.status.equals("io"), "a bad model path: status " + e.status);
            bad = e.getMessage();
        }
        Files.write(Paths.get(a[5]), (gen + "\n\0" + chat + "\n\0" + bad + "\n").getBytes(StandardCharsets.UTF_8));
    }
}
