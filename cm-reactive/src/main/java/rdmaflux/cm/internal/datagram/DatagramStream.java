package rdmaflux.cm.internal.datagram;

import rdmaflux.cm.internal.util.StreamWindow;

import java.nio.ByteBuffer;

import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.MonoSink;
import reactor.core.scheduler.Scheduler;
import rdmaflux.verbs.AddressHandle;

/**
 * One {@code send(Publisher)} of datagrams on a {@link UdSends}: it asks its source for one datagram per
 * send buffer, posts each one as soon as a buffer is free (waiting in a ring of its own meanwhile), and asks
 * for more once half of them were sent, or none is outstanding. Nothing is allocated per datagram and no
 * signal hops per datagram: the source is asked for more on the scheduler (once per half window). The
 * window's accounting (outstanding datagrams, the credit to request, the source's and the stream's end) is a
 * {@link StreamWindow}, as an RC connection's {@code send(Publisher)} has one; a datagram is outstanding
 * from the moment the stream takes it (waiting in the ring or posted) until its send ended.
 *
 * <p>Threads: the ring and the hand-over to the send queue are guarded by the {@link UdSends}' monitor
 * (the window is atomic); the source emits on its own thread; sends end on the completion loop; the source
 * is asked for more and cancelled on the scheduler.
 */
public final class DatagramStream implements CoreSubscriber<ByteBuffer> {
    final AddressHandle ah;
    final int qpn;
    final int qkey;
    private final UdSends sends;
    private final StreamWindow window;
    private final MonoSink<Void> sink;
    /** Datagrams emitted while no buffer was free, in order. */
    private final ByteBuffer[] ring;
    private int head;
    private int count;
    /** Whether it has its place in the send queue's line. */
    private boolean queued;
    private volatile Subscription upstream;

    DatagramStream(UdSends sends, AddressHandle ah, int qpn, int qkey, int window, Scheduler scheduler,
                   MonoSink<Void> sink) {
        this.sends = sends;
        this.ah = ah;
        this.qpn = qpn;
        this.qkey = qkey;
        this.window = new StreamWindow(window, scheduler, this::requestNow);
        this.sink = sink;
        this.ring = new ByteBuffer[window];
    }

    @Override
    public void onSubscribe(Subscription s) {
        upstream = s;
        s.request(window.size());
    }

    @Override
    public void onNext(ByteBuffer datagram) {
        Throwable refused = sends.refusal(datagram.remaining());
        synchronized (sends) {
            if (window.ended()) {
                return;
            }
            if (refused != null || sends.closed()) {
                fail(refused != null ? refused : sends.closedError());
                return;
            }
            window.take(); // outstanding from now on, posted at once or waiting in the ring
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
            if (end()) {
                sink.error(t);
            }
        }
    }

    @Override
    public void onComplete() {
        synchronized (sends) {
            window.sourceDone();
            if (window.outstanding() == 0 && end()) {
                sink.success();
            }
        }
    }

    /** The subscriber cancelled: datagrams not posted yet are dropped; any thread. */
    void cancel() {
        synchronized (sends) {
            if (!end()) {
                return;
            }
        }
        cancelUpstream();
    }

    /**
     * Guarded, on the completion loop: one of this stream's sends ended.
     *
     * @param error why it failed, or {@code null}
     */
    void sent(Throwable error) {
        assert Thread.holdsLock(sends) : "under the send queue's monitor";
        int left = window.finish();
        if (window.ended()) {
            return;
        }
        if (error != null) {
            fail(error);
            return;
        }
        if (window.isSourceDone()) {
            if (left == 0 && end()) {
                sink.success();
            }
            return;
        }
        window.finished(window.replace(), left);
    }

    /** {@return the next waiting datagram, or {@code null}; guarded} */
    ByteBuffer next() {
        assert Thread.holdsLock(sends) : "under the send queue's monitor";
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
        assert Thread.holdsLock(sends) : "under the send queue's monitor";
        return count > 0 && !window.ended();
    }

    /** Guarded: the send queue took it out of its line. */
    void unqueued() {
        assert Thread.holdsLock(sends) : "under the send queue's monitor";
        queued = false;
    }

    /**
     * Guarded: the stream fails with {@code e}; its source is cancelled (on the scheduler: cancelling may
     * run the source's code, which must not run on the completion loop).
     */
    void fail(Throwable e) {
        assert Thread.holdsLock(sends) : "under the send queue's monitor";
        if (!end()) {
            return;
        }
        sink.error(e);
        if (upstream != null) {
            window.schedule(this::cancelUpstream);
        }
    }

    /**
     * Guarded: no more datagrams are taken or posted; what waits in the ring is dropped.
     *
     * @return whether this call ended the stream (the caller signals the end), false if it had ended
     */
    private boolean end() {
        if (!window.end()) {
            return false;
        }
        while (count > 0) {
            next();
        }
        sends.withdraw(this);
        queued = false;
        return true;
    }

    private void cancelUpstream() {
        Subscription s = upstream;
        if (s != null) {
            s.cancel();
        }
    }

    /** On the scheduler: asks the source for what was sent since the last time. */
    private void requestNow() {
        window.requestStarted();
        window.requestFrom(upstream);
    }
}
