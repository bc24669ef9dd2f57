package rdmaflux.samples.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * The joint warm-up's rule ({@link Warmup#settleTogether}), with sides that record their rounds and a JIT whose
 * quiet rounds are scripted: every side runs as many rounds as the others, in turn, and the JIT alone decides
 * when the warm-up ends.
 */
class WarmupTest {
    /** Every round run, in order: "A", "B", "A", ... */
    private final List<String> log = new ArrayList<>();
    private final List<String> said = new ArrayList<>();

    private Warmup.Side side(String name, double rate) {
        return new Warmup.Side(name, () -> {
            log.add(name);
            return rate;
        });
    }

    /** A JIT quiet through the rounds the script says, round by round; after the script, busy. */
    private static Warmup.JitWatch jit(Boolean... quiet) {
        Iterator<Boolean> next = List.of(quiet).iterator();
        return () -> {
            boolean q = next.hasNext() && next.next();
            return () -> q;
        };
    }

    private int settle(int max, Warmup.JitWatch jit) {
        return Warmup.settleTogether(max, List.of(side("A", 1), side("B", 2), side("C", 3)), jit, said::add);
    }

    private void assertTurns(int rounds) {
        assertEquals(3 * rounds, log.size(), "three sides, " + rounds + " rounds each: " + log);
        for (int i = 0; i < log.size(); i++) {
            assertEquals(List.of("A", "B", "C").get(i % 3), log.get(i), "round " + (i / 3 + 1) + ": " + log);
        }
    }

    @Test
    void sidesTakeTurnsAndEndAfterTheJitWasQuietThroughRoundsInARow() {
        // Quiet from the start: the fewest rounds there may be.
        int rounds = settle(100, jit(true, true, true, true, true, true, true, true));
        assertEquals(Warmup.MIN_ROUNDS, rounds);
        assertTurns(rounds);
        assertEquals("bench: warm after 6 rounds of each: A 1, B 2, C 3", said.getFirst());
    }

    @Test
    void aBusyRoundStartsTheCountAgain() {
        Boolean[] script = {false, false, false, false, false, true, true, false, true, true, true, true};
        int rounds = settle(100, jit(script));
        assertEquals(11, rounds, "quiet through rounds 9, 10 and 11, after round 8 compiled");
        assertTurns(rounds);
    }

    @Test
    void endsAtTheMostRoundsAndSaysTheJitWasStillCompiling() {
        int rounds = settle(20, jit());
        assertEquals(20, rounds);
        assertTurns(rounds);
        assertTrue(said.getFirst().endsWith("; the JIT still compiling"), said.getFirst());
    }
}
