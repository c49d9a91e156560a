import org.pocketflash.PocketFlash;

/** One generation through the Java binding: Bench TARGET DRAFT PROMPT N MODE [THREADS], MODE plain, default
 *  (the draft's default strategy) or dflash:B; prints the library's decode tok/s ((nGen - 1) /
 *  decodeS, the clock `pocketflash run` prints), nGen and tau. */
public final class Bench {
    public static void main(String[] a) {
        String[] mode = a[4].split(":");
        try (PocketFlash.Model m = new PocketFlash.Model(a[0]);
             PocketFlash.Draft d = m.loadDraft(a[1]);
             PocketFlash.Session s = m.session(a.length > 5 ? Integer.parseInt(a[5]) : 2)) {
            PocketFlash.Options o = new PocketFlash.Options().maxTokens(Integer.parseInt(a[3])).stopAtEot(false);
            if (mode[0].equals("plain")) o.strategy(PocketFlash.Strategy.PLAIN);
            else o.draft(d);
            if (mode[0].equals("dflash")) o.strategy(PocketFlash.Strategy.DFLASH).block(Integer.parseInt(mode[1]));
            s.generate(a[2], o, piece -> { System.err.print(piece); return false; });
            PocketFlash.Stats st = s.stats();
            System.out.printf("%.2f %d %.3f%n", st.decodeTokPerS, st.nGen, st.tau);
        }
    }
}
