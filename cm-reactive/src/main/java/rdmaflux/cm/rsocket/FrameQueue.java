package rdmaflux.cm.rsocket;

import io.netty.buffer.ByteBuf;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import reactor.core.Fuseable;
import reactor.core.publisher.Operators;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The outbound frames of one connection: RSocket hands them over from any thread ({@link #enqueue}), and the
 * one subscriber (the connection's send stream) takes them as its demand allows, in order, except that a
 * prioritized frame (the connection's own, on stream 0: keepalives, leases) goes ahead of every ordinary frame
 * still queued, as rsocket-java's own transports send them. Without that, a keepalive waits behind a stream's
 * backlog, however long, and a peer that sent thousands of items ahead of it is taken for dead once the
 * keepalive's lifetime runs out. After
 * {@link #cancel()} every frame still queued, and every frame offered later, is released at once: nothing is
 * left to leak.
 *
 * <p>The subscriber may fuse with the queue (Reactor's {@link Fuseable#ASYNC} mode): then a signal only says
 * that frames are there, and it polls them itself, as many as it can send, so it can send a run of
 * frames together (the connection's send stream posts them with one doorbell) instead of one per signal.
 *
 * <p>Threads: {@link #enqueue} from any thread; signals are serialized by a work-in-progress counter, on the
 * thread that offered or requested when nobody else is signalling. {@link #poll()} is safe from any thread
 * (a fused subscriber's, while a cancel releases what is left).
 */
final class FrameQueue implements Publisher<ByteBuf>, Fuseable.QueueSubscription<ByteBuf> {
    private final Queue<ByteBuf> frames = new ConcurrentLinkedQueue<>();
    /** Frames that go ahead of {@link #frames}: rare (one a keepalive interval); an empty check a frame otherwise. */
    private final Queue<ByteBuf> prioritized = new ConcurrentLinkedQueue<>();
    private final AtomicInteger wip = new AtomicInteger();
    private final AtomicLong requested = new AtomicLong();
    private final AtomicBoolean subscribed = new AtomicBoolean();
    private volatile Subscriber<? super ByteBuf> actual;
    private volatile boolean cancelled;
    /** Whether the subscriber fused: it polls, and {@code onNext(null)} says there is something to poll. */
    private volatile boolean fused;

    @Override
    public void subscribe(Subscriber<? super ByteBuf> s) {
        if (!subscribed.compareAndSet(false, true)) {
            Operators.error(s, new IllegalStateException("a connection's frames have one sender"));
            return;
        }
        s.onSubscribe(this);
        actual = s;
        drain();
    }

    /** Any thread: queues a frame for sending, or releases it when the sending ended. */
    void enqueue(ByteBuf frame) {
        enqueue(frame, false);
    }

    /**
     * Any thread: queues a frame for sending, ahead of the ordinary frames still queued when
     * {@code prioritized}, or releases it when the sending ended.
     */
    void enqueue(ByteBuf frame, boolean prioritized) {
        if (cancelled) {
            frame.release();
            return;
        }
        (prioritized ? this.prioritized : frames).offer(frame);
        drain(); // releases it too if a cancel came in between
    }

    /** {@return whether the sending ended: frames offered now are released, not sent} */
    boolean isCancelled() {
        return cancelled;
    }

    @Override
    public void request(long n) {
        if (Operators.validate(n)) {
            requested.getAndUpdate(r -> Operators.addCap(r, n));
            drain();
        }
    }

    @Override
    public void cancel() {
        cancelled = true;
        drain();
    }

    @Override
    public int requestFusion(int requestedMode) {
        if ((requestedMode & Fuseable.ASYNC) != 0) {
            fused = true;
            return Fuseable.ASYNC;
        }
        return Fuseable.NONE;
    }

    /**
     * The fused subscriber: the next frame (a prioritized one first), or null; a frame taken after a cancel is
     * the caller's to release.
     */
    @Override
    public ByteBuf poll() {
        ByteBuf f = prioritized.poll();
        return f != null ? f : frames.poll();
    }

    @Override
    public int size() {
        return prioritized.size() + frames.size();
    }

    @Override
    public boolean isEmpty() {
        return prioritized.isEmpty() && frames.isEmpty();
    }

    /** Releases every queued frame. */
    @Override
    public void clear() {
        ByteBuf f;
        while ((f = poll()) != null) {
            f.release();
        }
    }

    private void drain() {
        if (wip.getAndIncrement() != 0) {
            return;
        }
        int missed = 1;
        do {
            Subscriber<? super ByteBuf> s = actual;
            if (cancelled) {
                clear();
            } else if (s != null && fused) {
                if (!isEmpty()) {
                    s.onNext(null); // it polls what it can send now, and is signalled again for later frames
                }
            } else if (s != null) {
                long r = requested.get();
                long sent = 0;
                ByteBuf f;
                while (sent != r && !cancelled && (f = poll()) != null) {
                    s.onNext(f);
                    sent++;
                }
                if (sent != 0 && r != Long.MAX_VALUE) {
                    requested.addAndGet(-sent);
                }
                if (cancelled) {
                    continue; // the subscriber cancelled in onNext: release the rest
                }
            }
            missed = wip.addAndGet(-missed);
        } while (missed != 0);
    }
}
