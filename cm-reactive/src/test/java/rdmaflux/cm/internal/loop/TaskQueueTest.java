package rdmaflux.cm.internal.loop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.junit.jupiter.api.Test;

class TaskQueueTest {

    /** A task that says who queued it and in which order. */
    private static final class Numbered extends TaskQueue.Task {
        final int producer;
        final int n;

        Numbered(int producer, int n) {
            this.producer = producer;
            this.n = n;
        }

        @Override
        public void run() {
        }
    }

    @Test
    void oneProducerGetsItsTasksBackInOrderAndAPolledTaskMayBeQueuedAgain() {
        TaskQueue q = new TaskQueue();
        assertTrue(q.isEmpty());
        assertNull(q.poll());
        Numbered a = new Numbered(0, 0);
        Numbered b = new Numbered(0, 1);
        q.offer(a);
        assertFalse(q.isEmpty());
        q.offer(b);
        assertSame(a, q.poll());
        assertSame(b, q.poll());
        assertNull(q.poll());
        assertTrue(q.isEmpty());
        // The drain of a subscriber is queued again and again: the same node, once polled each time.
        for (int i = 0; i < 5; i++) {
            q.offer(a);
            assertSame(a, q.poll());
            assertTrue(q.isEmpty());
        }
        q.offer(a);
        q.offer(b);
        q.offer(new Numbered(0, 2));
        assertSame(a, q.poll());
        q.offer(a); // a was polled: it may follow the ones still queued
        assertSame(b, q.poll());
        assertEquals(2, ((Numbered) q.poll()).n);
        assertSame(a, q.poll());
        assertTrue(q.isEmpty());
    }

    /** Four producers at once: every task comes out once, each producer's in the order it queued them. */
    @Test
    void concurrentProducersLoseNothingAndKeepTheirOwnOrder() throws InterruptedException {
        int producers = 4;
        int each = 200_000;
        TaskQueue q = new TaskQueue();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            int id = p;
            Thread t = new Thread(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int n = 0; n < each; n++) {
                    q.offer(new Numbered(id, n));
                }
            });
            t.start();
            threads.add(t);
        }
        start.countDown();
        int[] next = new int[producers];
        int got = 0;
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (got < producers * each && System.nanoTime() < deadline) {
            TaskQueue.Task t = q.poll();
            if (t == null) {
                Thread.onSpinWait();
                continue;
            }
            Numbered n = (Numbered) t;
            assertEquals(next[n.producer], n.n, "producer " + n.producer + "'s order");
            next[n.producer]++;
            got++;
        }
        for (Thread t : threads) {
            t.join();
        }
        assertEquals(producers * each, got);
        assertNull(q.poll());
        assertTrue(q.isEmpty());
    }
}
