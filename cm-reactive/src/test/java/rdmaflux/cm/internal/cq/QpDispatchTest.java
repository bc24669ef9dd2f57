package rdmaflux.cm.internal.cq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import rdmaflux.testing.TestCompletions;
import rdmaflux.verbs.WorkCompletions;

/** A shared CQ's batches dispatched by {@code qp_num} ({@link QpDispatch}), without a device. */
class QpDispatchTest {

    /** A connection that drains its inbox when told, recording its wr_ids and the order it was told in. */
    private static class Conn implements QpDispatch.Member, CqDrain.Sink {
        final String name;
        final List<String> told;
        final List<Long> received = new ArrayList<>();
        final CqInbox inbox = new CqInbox(this, 2);
        boolean drainWhenTold = true;

        Conn(String name, List<String> told) {
            this.name = name;
            this.told = told;
        }

        @Override
        public CqInbox inbox() {
            return inbox;
        }

        @Override
        public void dispatched() {
            told.add(name);
            if (drainWhenTold) {
                inbox.drain();
            }
        }

        @Override
        public void complete(WorkCompletions wc, int i) {
            received.add(wc.wrId(i));
        }
    }

    private static void poll(QpDispatch d, WorkCompletions batch) {
        d.polled(batch.count());
        try {
            for (int i = 0; i < batch.count(); i++) {
                d.complete(batch, i);
            }
        } finally {
            d.handled();
        }
    }

    @Test
    void eachConnectionGetsItsOwnCompletionsInOrderAndIsToldOncePerBatch() {
        List<String> told = new ArrayList<>();
        Conn a = new Conn("a", told);
        Conn b = new Conn("b", told);
        QpDispatch d = new QpDispatch();
        assertTrue(d.add(100, a));
        assertTrue(d.add(101, b));
        poll(d, TestCompletions.of(new int[] {101, 100, 101, 100, 100, 101, 101},
                new long[] {1, 2, 3, 4, 5, 6, 7}));
        assertEquals(List.of(2L, 4L, 5L), a.received);
        assertEquals(List.of(1L, 3L, 6L, 7L), b.received);
        assertEquals(List.of("b", "a"), told, "told once each, in the order first touched");
        assertEquals(0, d.dropped());
        assertFalse(d.polling());
    }

    @Test
    void completionsOfUnknownOrDepartedConnectionsAreDroppedAndCounted() {
        List<String> told = new ArrayList<>();
        Conn a = new Conn("a", told);
        Conn gone = new Conn("gone", told);
        QpDispatch d = new QpDispatch();
        d.add(1, a);
        d.add(2, gone);
        gone.inbox.close(); // left its loop; its number stays registered until its QP is destroyed
        poll(d, TestCompletions.of(new int[] {2, 1, 3, 2}, new long[] {10, 11, 12, 13}));
        assertEquals(List.of(11L), a.received);
        assertTrue(gone.received.isEmpty());
        assertEquals(List.of("a"), told);
        assertEquals(3, d.dropped());
        // A new QP given number 2 meanwhile cannot take it over: the departed one still holds it.
        assertFalse(d.add(2, new Conn("new", told)));
        d.remove(2, gone);
        assertTrue(d.add(2, new Conn("new", told)));
    }

    @Test
    void aConnectionThatDoesNotDrainYetKeepsItsCompletionsForLater() {
        List<String> told = new ArrayList<>();
        Conn a = new Conn("a", told);
        a.drainWhenTold = false; // its lock is held elsewhere, or it is not established yet
        QpDispatch d = new QpDispatch();
        d.add(7, a);
        for (int batch = 0; batch < 3; batch++) {
            poll(d, TestCompletions.of(new int[] {7, 7}, new long[] {2 * batch, 2 * batch + 1}));
        }
        assertTrue(a.received.isEmpty());
        assertEquals(3, told.size());
        a.inbox.drain(); // the holder, before it lets go
        assertEquals(List.of(0L, 1L, 2L, 3L, 4L, 5L), a.received);
    }

    @Test
    void oneConnectionThatThrowsDoesNotKeepTheOthersFromTheirCompletions() {
        List<String> told = new ArrayList<>();
        Conn b = new Conn("b", told);
        QpDispatch d = new QpDispatch();
        d.add(1, new Conn("a", told) {
            @Override
            public void dispatched() {
                throw new IllegalStateException("boom");
            }
        });
        d.add(2, b);
        poll(d, TestCompletions.of(new int[] {1, 2}, new long[] {1, 2}));
        assertEquals(List.of(2L), b.received);
        assertFalse(d.polling());
    }
}
