package rdmaflux.cm.rsocket;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import reactor.core.Fuseable;

/** {@link FrameQueue}: order, demand, the fused mode the send stream uses, and releasing after a cancel. */
class FrameQueueTest {

    private static ByteBuf frame(int i) {
        return Unpooled.buffer(4).writeInt(i);
    }

    /** Records what it is given; fused or not. */
    private static final class Recorder implements Subscriber<ByteBuf> {
        final boolean fuse;
        final List<ByteBuf> got = new ArrayList<>();
        int signals;
        Fuseable.QueueSubscription<ByteBuf> queue;
        Subscription subscription;

        Recorder(boolean fuse) {
            this.fuse = fuse;
        }

        @Override
        @SuppressWarnings("unchecked")
        public void onSubscribe(Subscription s) {
            subscription = s;
            if (fuse) {
                queue = (Fuseable.QueueSubscription<ByteBuf>) s;
                assertEquals(Fuseable.ASYNC, queue.requestFusion(Fuseable.ANY));
            }
        }

        @Override
        public void onNext(ByteBuf frame) {
            if (fuse) {
                assertNull(frame, "a fused subscriber is only signalled");
                signals++;
                return;
            }
            got.add(frame);
        }

        void pollAll() {
            ByteBuf f;
            while ((f = queue.poll()) != null) {
                got.add(f);
            }
        }

        @Override
        public void onError(Throwable t) {
            throw new AssertionError(t);
        }

        @Override
        public void onComplete() {
            throw new AssertionError("a frame queue never completes");
        }
    }

    @Test
    void deliversInOrderWithinDemand() {
        FrameQueue q = new FrameQueue();
        Recorder r = new Recorder(false);
        q.subscribe(r);
        r.subscription.request(2);
        ByteBuf[] frames = {frame(0), frame(1), frame(2)};
        for (ByteBuf f : frames) {
            q.enqueue(f);
        }
        assertEquals(List.of(frames[0], frames[1]), r.got);
        r.subscription.request(5);
        assertEquals(List.of(frames[0], frames[1], frames[2]), r.got);
    }

    @Test
    void fusedSubscriberPollsInOrder() {
        FrameQueue q = new FrameQueue();
        Recorder r = new Recorder(true);
        q.subscribe(r);
        ByteBuf[] frames = {frame(0), frame(1), frame(2)};
        for (ByteBuf f : frames) {
            q.enqueue(f);
        }
        assertEquals(3, r.signals, "one signal per frame that arrived while nothing was being polled");
        assertEquals(3, q.size());
        r.pollAll();
        assertEquals(List.of(frames[0], frames[1], frames[2]), r.got);
        assertEquals(0, q.size());
    }

    @Test
    void aPrioritizedFrameGoesAheadOfTheBacklogAndKeepsItsOwnOrder() {
        for (boolean fuse : new boolean[] {false, true}) {
            FrameQueue q = new FrameQueue();
            Recorder r = new Recorder(fuse);
            q.subscribe(r);
            ByteBuf[] backlog = {frame(0), frame(1), frame(2)};
            for (ByteBuf f : backlog) {
                q.enqueue(f, false);
            }
            ByteBuf keepalive = frame(100);
            ByteBuf lease = frame(101);
            q.enqueue(keepalive, true);
            q.enqueue(lease, true);
            assertEquals(5, q.size());
            if (fuse) {
                r.pollAll();
            } else {
                r.subscription.request(10);
            }
            assertEquals(List.of(keepalive, lease, backlog[0], backlog[1], backlog[2]), r.got, "fused " + fuse);
            assertEquals(0, q.size());
        }
    }

    @Test
    void cancelReleasesQueuedAndLaterFrames() {
        for (boolean fuse : new boolean[] {false, true}) {
            FrameQueue q = new FrameQueue();
            Recorder r = new Recorder(fuse);
            q.subscribe(r);
            ByteBuf queued = frame(0);
            q.enqueue(queued);
            ByteBuf queuedFirst = frame(2);
            q.enqueue(queuedFirst, true);
            r.subscription.cancel();
            assertEquals(0, queuedFirst.refCnt(), "queued prioritized frame released (fused " + fuse + ")");
            ByteBuf later = frame(1);
            q.enqueue(later);
            assertEquals(0, queued.refCnt(), "queued frame released (fused " + fuse + ")");
            assertEquals(0, later.refCnt(), "later frame released (fused " + fuse + ")");
            assertSame(true, q.isCancelled());
        }
    }
}
