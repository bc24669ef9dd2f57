package rdmaflux.cm.rsocket;

import io.netty.buffer.ByteBuf;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import reactor.core.publisher.Operators;
import reactor.util.concurrent.Queues;

import java.util.Queue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The outbound frames of one connection: RSocket hands them over from any thread ({@link #offer}), and the
 * one subscriber (the connection's send stream) takes them as its demand allows, in order. After
 * {@link #cancel()} every frame still queued, and every frame offered later, is released at once: nothing is
 * left to leak.
 *
 * <p>Threads: {@link #offer} from any thread; delivery is serialized by a work-in-progress counter, on the
 * thread that offered or requested when nobody else is delivering.
 */
final class FrameQueue implements Publisher<ByteBuf>, Subscription {
    private final Queue<ByteBuf> frames = Queues.<ByteBuf>unboundedMultiproducer().get();
    private final AtomicInteger wip = new AtomicInteger();
    private final AtomicLong requested = new AtomicLong();
    private final AtomicBoolean subscribed = new AtomicBoolean();
    private volatile Subscriber<? super ByteBuf> actual;
    private volatile boolean cancelled;

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
    void offer(ByteBuf frame) {
        if (cancelled) {
            frame.release();
            return;
        }
        frames.offer(frame);
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

    private void drain() {
        if (wip.getAndIncrement() != 0) {
            return;
        }
        int missed = 1;
        do {
            Subscriber<? super ByteBuf> s = actual;
            if (cancelled) {
                ByteBuf f;
                while ((f = frames.poll()) != null) {
                    f.release();
                }
            } else if (s != null) {
                long r = requested.get();
                long sent = 0;
                ByteBuf f;
                while (sent != r && !cancelled && (f = frames.poll()) != null) {
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
