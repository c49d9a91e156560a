import org.pocketflash.PocketFlash;

/** One generation through the Java binding: Bench TARGET DRAFT PROMPT N [plain]; prints the
 *  library's decode tok/s ((nGen - 1) / decodeS, the clock `pocketflash run` prints). */
public final class Bench {
    public static void main(String[] a) {
        boolean plain = a.length > 4;
        try (PocketFlash.Model m = new PocketFlash.Model(a[0]);
             PocketFlash.Draft d = m.loadDraft(a[1]);
             PocketFlash.Session s = m.session(2)) {
            PocketFlash.Options o = new PocketFlash.Options().maxTokens(Integer.parseInt(a[3])).stopAtEot(false);
            if (plain) o.strategy(PocketFlash.Strategy.PLAIN);
            else o.draft(d);
            s.generate(a[2], o, piece -> { System.err.print(piece); return false; });
            PocketFlash.Stats st = s.stats();
            System.out.printf("%.2f %d %.3f%n", st.decodeTokPerS, st.nGen, st.tau);
        }
    }
}
