package rdmaflux.cm.internal.cq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import rdmaflux.testing.TestCompletions;
import rdmaflux.verbs.WorkCompletions;

/** A connection's inbox on a shared CQ ({@link CqInbox}): order kept, nothing lost, nothing after close. */
class CqInboxTest {
    /** Records what the connection was handed, and the batches. */
    private static final class Sink implements CqDrain.Sink {
        final List<Long> wrIds = new ArrayList<>();
        final List<Integer> batches = new ArrayList<>();
        int open;
        Runnable during = () -> {
        };

        @Override
        public void complete(WorkCompletions wc, int i) {
            assertEquals(1, open, "completions are handed inside polled/handled");
            wrIds.add(wc.wrId(i));
            during.run();
        }

        @Override
        public void polled(int n) {
            open++;
            batches.add(n);
        }

        @Override
        public void handled() {
            open--;
        }
    }

    private static WorkCompletions polled(long... wrIds) {
        return TestCompletions.of(new int[wrIds.length], wrIds);
    }

    @Test
    void handsOverInTheOrderPolledInOneBatch() {
        Sink sink = new Sink();
        CqInbox inbox = new CqInbox(sink, 8);
        WorkCompletions wc = polled(1, 2, 3);
        inbox.offer(wc, 2);
        inbox.offer(wc, 0);
        inbox.offer(wc, 1);
        assertTrue(inbox.pending());
        assertTrue(inbox.drain());
        assertEquals(List.of(3L, 1L, 2L), sink.wrIds);
        assertEquals(List.of(3), sink.batches);
        assertFalse(inbox.pending());
        assertFalse(inbox.drain());
    }

    @Test
    void growsRatherThanLoseACompletion() {
        Sink sink = new Sink();
        CqInbox inbox = new CqInbox(sink, 2);
        WorkCompletions wc = polled(10, 11, 12, 13, 14);
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < 5; i++) {
                assertTrue(inbox.offer(wc, i));
            }
        }
        assertTrue(inbox.capacity() >= 15);
        inbox.drain();
        assertEquals(15, sink.wrIds.size());
        for (int i = 0; i < 15; i++) {
            assertEquals(10L + i % 5, sink.wrIds.get(i));
        }
    }

    /** What the loop copies in while the drainer handles a batch is handed over after it, in order. */
    @Test
    void completionsArrivingDuringADrainFollowInOrder() {
        Sink sink = new Sink();
        CqInbox inbox = new CqInbox(sink, 4);
        WorkCompletions wc = polled(1, 2, 3, 4, 5, 6);
        inbox.offer(wc, 0);
        inbox.offer(wc, 1);
        int[] next = {2};
        sink.during = () -> {
            if (next[0] < 6) {
                inbox.offer(wc, next[0]++);
                inbox.drain(); // nested: must not swap away the batch being handed over
            }
        };
        inbox.drain();
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L), sink.wrIds);
    }

    @Test
    void aClosedInboxDropsWhatArrives() {
        Sink sink = new Sink();
        CqInbox inbox = new CqInbox(sink, 4);
        WorkCompletions wc = polled(1, 2);
        inbox.offer(wc, 0);
        inbox.close();
        assertFalse(inbox.offer(wc, 1));
        assertFalse(inbox.drain());
        assertTrue(sink.wrIds.isEmpty());
    }
}
