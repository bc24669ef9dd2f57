package rdmaflux.cm.internal.datagram;

import java.nio.ByteBuffer;

import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.MonoSink;
import reactor.core.scheduler.Scheduler;
import rdmaflux.verbs.AddressHandle;

/**
 * One {@code send(Publisher)} of datagrams on a {@link UdSends}: it asks its source for one datagram per
 * send buffer, posts each one as soon as a buffer is free (waiting in a ring of its own meanwhile), and asks
 * for more once half of them were sent. Nothing is allocated per datagram and no signal hops per datagram:
 * the source is asked for more on the scheduler (once per half window), and the stream's end is signalled
 * there.
 *
 * <p>Threads: guarded by the {@link UdSends}' monitor; the source emits on its own thread.
 */
public final class DatagramStream implements CoreSubscriber<ByteBuffer> {
    final AddressHandle ah;
    final int qpn;
    final int qkey;
    private final UdSends sends;
    private final int window;
    private final Scheduler scheduler;
    private final MonoSink<Void> sink;
    /** Datagrams emitted while no buffer was free, in order. */
    private final ByteBuffer[] ring;
    private int head;
    private int count;
    private int inFlight;
    /** Datagrams sent since the source was last asked for more. */
    private int done;
    /** How many to ask the source for when the scheduled request runs. */
    private long toRequest;
    private boolean requestScheduled;
    /** Whether it has its place in the send queue's line. */
    private boolean queued;
    private boolean sourceDone;
    private boolean ended;
    private volatile Subscription upstream;
    private final Runnable request = this::requestNow;

    DatagramStream(UdSends sends, AddressHandle ah, int qpn, int qkey, int window, Scheduler scheduler,
                   MonoSink<Void> sink) {
        this.sends = sends;
        this.ah = ah;
        this.qpn = qpn;
        this.qkey = qkey;
        this.window = window;
        this.scheduler = scheduler;
        this.sink = sink;
        this.ring = new ByteBuffer[window];
    }

    @Override
    public void onSubscribe(Subscription s) {
        upstream = s;
        s.request(window);
    }

    @Override
    public void onNext(ByteBuffer datagram) {
        Throwable refused = sends.refusal(datagram.remaining());
        synchronized (sends) {
            if (ended) {
                return;
            }
            if (refused != null || sends.closed()) {
                fail(refused != null ? refused : sends.closedError());
                return;
            }
            if (!queued && sends.offer(this, datagram)) {
                return;
            }
            if (count == ring.length) {
                fail(new IllegalStateException("the source emitted more datagrams than were requested"));
                return;
            }
            ring[(head + count) % ring.length] = datagram;
            count++;
            if (!queued) {
                queued = true;
                sends.queue(this);
            }
        }
    }

    @Override
    public void onError(Throwable t) {
        synchronized (sends) {
            if (!ended) {
                end();
                sink.error(t);
            }
        }
    }

    @Override
    public void onComplete() {
        synchronized (sends) {
            sourceDone = true;
            if (!ended && inFlight == 0 && count == 0) {
                end();
                sink.success();
            }
        }
    }

    /** The subscriber cancelled: datagrams not posted yet are dropped; any thread. */
    void cancel() {
        synchronized (sends) {
            if (ended) {
                return;
            }
            end();
        }
        cancelUpstream();
    }

    /** Guarded: a datagram of this stream was posted. */
    void posted() {
        inFlight++;
    }

    /**
     * Guarded, on the completion loop: one of this stream's sends ended.
     *
     * @param error why it failed, or {@code null}
     */
    void sent(Throwable error) {
        inFlight--;
        if (ended) {
            return;
        }
        if (error != null) {
            fail(error);
            return;
        }
        if (sourceDone) {
            if (inFlight == 0 && count == 0) {
                end();
                sink.success();
            }
            return;
        }
        done++;
        if (done >= Math.max(1, window / 2) || (inFlight == 0 && count == 0)) {
            toRequest += done;
            done = 0;
            if (!requestScheduled) {
                requestScheduled = true;
                scheduler.schedule(request);
            }
        }
    }

    /** {@return the next waiting datagram, or {@code null}; guarded} */
    ByteBuffer next() {
        if (count == 0) {
            return null;
        }
        ByteBuffer b = ring[head];
        ring[head] = null;
        head = (head + 1) % ring.length;
        count--;
        return b;
    }

    /** {@return whether datagrams wait for a buffer; guarded} */
    boolean hasWaiting() {
        return count > 0 && !ended;
    }

    /** Guarded: the send queue took it out of its line. */
    void unqueued() {
        queued = false;
    }

    /**
     * Guarded: the stream fails with {@code e}; its source is cancelled (on the scheduler: cancelling may
     * run the source's code, which must not run on the completion loop).
     */
    void fail(Throwable e) {
        if (ended) {
            return;
        }
        end();
        sink.error(e);
        if (upstream != null) {
            scheduler.schedule(this::cancelUpstream);
        }
    }

    /** Guarded: no more datagrams are taken or posted. */
    private void end() {
        ended = true;
        while (count > 0) {
            next();
        }
        sends.withdraw(this);
        queued = false;
    }

    private void cancelUpstream() {
        Subscription s = upstream;
        if (s != null) {
            s.cancel();
        }
    }

    /** On the scheduler: asks the source for what was sent since the last time. */
    private void requestNow() {
        long n;
        synchronized (sends) {
            n = toRequest;
            toRequest = 0;
            requestScheduled = false;
            if (ended) {
                return;
            }
        }
        if (n > 0) {
            upstream.request(n);
        }
    }
}
