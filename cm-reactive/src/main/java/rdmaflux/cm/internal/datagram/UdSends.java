package rdmaflux.cm.internal.datagram;

import rdmaflux.cm.internal.memory.BufferSlabs;
import rdmaflux.cm.RdmaRecorder;

import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;

import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.scheduler.Scheduler;
import rdmaflux.verbs.AddressHandle;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.SendFlag;
import rdmaflux.verbs.SendOpcode;
import rdmaflux.verbs.SendRequests;

/**
 * The send side of a {@link UdQueue}: its registered send buffers, the sends in flight (one per buffer),
 * and the sends waiting for a buffer, in order. A send is a single datagram ({@link #send(AddressHandle,
 * int, int, ByteBuffer, boolean, int)}, a {@code Mono} each) or a stream of them ({@link #send(AddressHandle,
 * int, int, Publisher)}, a {@link DatagramStream}: no object, no {@code Mono} and no scheduler hop per
 * datagram).
 *
 * <p>Threads: guarded by {@code this}. Sends are posted from the thread that offers them (the caller's, or
 * the stream source's) or, when a buffer frees up, from the completion loop.
 */
public final class UdSends {

    /** One datagram waiting for a buffer. */
    private record Single(AddressHandle ah, int qpn, int qkey, ByteBuffer data, boolean withImmediate,
                          int immediate, MonoSink<Void> sink) {
    }

    private final QueuePair qp;
    private final RdmaRecorder recorder;
    private final Scheduler scheduler;
    private final int maxPayload;
    private final String limitText;
    private final int sendBuffers;
    private final MemoryRegion region;
    /** The region as a buffer, to copy datagrams in without a segment view per copy. */
    private final ByteBuffer regionBuffer;
    private final SendRequests batch = new SendRequests(1, 1);
    /** Per buffer: the {@link MonoSink} or {@link DatagramStream} whose datagram it carries, or null. */
    private final Object[] inFlight;
    private final int[] inFlightBytes;
    private final int[] free;
    private int freeTop;
    /** {@link Single}s and {@link DatagramStream}s with a datagram waiting, in the order they arrived. */
    private final ArrayDeque<Object> waiting = new ArrayDeque<>();
    /** Streams not ended yet, whether or not they have a datagram in flight or waiting: a close ends them. */
    private final java.util.List<DatagramStream> streams = new java.util.ArrayList<>();
    private Throwable closedCause;
    private boolean closed;

    /**
     * Registers the send buffers ({@code maxPayload} bytes each) in {@code pd}.
     *
     * @param sendBuffers 0 for a queue that cannot send
     * @param limitText what the payload limit is, for the error of a datagram that exceeds it
     */
    UdSends(QueuePair qp, ProtectionDomain pd, Arena arena, int sendBuffers, int maxPayload, String limitText,
            RdmaRecorder recorder, Scheduler scheduler) {
        this.qp = qp;
        this.recorder = recorder;
        this.scheduler = scheduler;
        this.maxPayload = maxPayload;
        this.limitText = limitText;
        this.sendBuffers = sendBuffers;
        region = sendBuffers > 0 ? pd.register(BufferSlabs.allocate(arena, (long) maxPayload * sendBuffers, 64)) : null;
        regionBuffer = region != null ? region.segment().asByteBuffer() : null;
        inFlight = new Object[sendBuffers];
        inFlightBytes = new int[sendBuffers];
        free = new int[sendBuffers];
        for (int i = 0; i < sendBuffers; i++) {
            free[i] = sendBuffers - 1 - i;
        }
        freeTop = sendBuffers;
    }

    /** {@return the registered send buffers, or {@code null}; closed by the queue's owner} */
    MemoryRegion region() {
        return region;
    }

    /**
     * Sends one datagram. The payload is copied when posted (maybe after subscription, when every send
     * buffer is busy); the Mono completes when the device reports the send done.
     */
    Mono<Void> send(AddressHandle ah, int qpn, int qkey, ByteBuffer data, boolean withImmediate, int immediate) {
        Throwable refused = refusal(data.remaining());
        if (refused != null) {
            return Mono.error(refused);
        }
        return Mono.<Void>create(sink -> {
            synchronized (this) {
                if (closed) {
                    sink.error(closedError());
                    return;
                }
                if (waiting.isEmpty() && freeTop > 0) {
                    post(ah, qpn, qkey, data, withImmediate, immediate, sink);
                } else {
                    waiting.add(new Single(ah, qpn, qkey, data, withImmediate, immediate, sink));
                }
            }
        }).publishOn(scheduler);
    }

    /**
     * Sends datagrams in order to one destination, up to one per send buffer in flight; completes when the
     * source completed and every datagram's send is done, fails on the first failed send (the source is
     * cancelled). The source is asked for more on the scheduler, never on the completion loop.
     */
    Mono<Void> send(AddressHandle ah, int qpn, int qkey, Publisher<? extends ByteBuffer> datagrams) {
        Throwable refused = refusal(0);
        if (refused != null) {
            return Mono.error(refused);
        }
        return Mono.<Void>create(sink -> {
            DatagramStream stream = new DatagramStream(this, ah, qpn, qkey, sendBuffers, scheduler, sink);
            synchronized (this) {
                if (closed) {
                    sink.error(closedError());
                    return;
                }
                streams.add(stream);
            }
            sink.onCancel(stream::cancel);
            Flux.from(datagrams).subscribe(stream);
        }).publishOn(scheduler);
    }

    /** {@return why a datagram of {@code len} bytes cannot be sent, or {@code null}} */
    Throwable refusal(int len) {
        if (len > maxPayload) {
            return new IllegalArgumentException("datagram of " + len + " bytes exceeds the UD payload limit of "
                    + maxPayload + " bytes (" + limitText + "); the device would drop it");
        }
        if (sendBuffers == 0) {
            return new IllegalStateException("this queue cannot send");
        }
        return null;
    }

    /**
     * A stream's datagram: posted now when nothing waits before it and a buffer is free, else the stream
     * queues for a buffer (once; it keeps its own datagrams).
     *
     * @return whether it was posted; if not, the stream keeps the datagram
     */
    boolean offer(DatagramStream stream, ByteBuffer data) {
        assert Thread.holdsLock(this) : "under the monitor";
        if (waiting.isEmpty() && freeTop > 0) {
            post(stream.ah, stream.qpn, stream.qkey, data, false, 0, stream);
            return true;
        }
        return false;
    }

    /** A stream that has datagrams waiting; guarded by this. */
    void queue(DatagramStream stream) {
        assert Thread.holdsLock(this) : "under the monitor";
        waiting.add(stream);
    }

    /** A stream that ended takes its place out of the queue, and leaves the streams a close ends; guarded by this. */
    void withdraw(DatagramStream stream) {
        assert Thread.holdsLock(this) : "under the monitor";
        waiting.remove(stream);
        streams.remove(stream);
    }

    /** Guarded by this; {@code owner} is the single send's sink or the stream. */
    private void post(AddressHandle ah, int qpn, int qkey, ByteBuffer data, boolean withImmediate, int immediate,
                      Object owner) {
        assert Thread.holdsLock(this) : "under the monitor";
        int slot = free[--freeTop];
        int off = maxPayload * slot;
        int len = data.remaining();
        try {
            if (len > 0) {
                regionBuffer.put(off, data, data.position(), len);
            }
            batch.set(0, slot, withImmediate ? SendOpcode.SEND_WITH_IMM : SendOpcode.SEND,
                    SendFlag.mask(SendFlag.SIGNALED));
            if (withImmediate) {
                batch.immediate(0, immediate);
            }
            if (len > 0) {
                batch.sge(0, 0, region, off, len);
            }
            batch.ud(0, ah, qpn, qkey);
            qp.postSend(batch, 1);
        } catch (RuntimeException e) {
            free[freeTop++] = slot;
            if (owner instanceof DatagramStream s) {
                s.fail(e);
            } else {
                @SuppressWarnings("unchecked")
                MonoSink<Void> sink = (MonoSink<Void>) owner;
                sink.error(e);
            }
            return;
        }
        inFlight[slot] = owner;
        inFlightBytes[slot] = len;
    }

    /**
     * Completion loop: the send in buffer {@code slot} ended; the buffer goes to the next waiting send.
     *
     * @param error why it failed, or {@code null}
     */
    void completed(int slot, Throwable error) {
        MonoSink<Void> single = null;
        synchronized (this) {
            if (error == null) {
                recorder.datagramSent(inFlightBytes[slot]);
            }
            Object owner = inFlight[slot];
            inFlight[slot] = null;
            free[freeTop++] = slot;
            if (owner instanceof DatagramStream s) {
                s.sent(error);
            } else if (owner != null) {
                @SuppressWarnings("unchecked")
                MonoSink<Void> sink = (MonoSink<Void>) owner;
                single = sink;
            }
            postWaiting();
        }
        if (single != null) {
            if (error != null) {
                single.error(error);
            } else {
                single.success();
            }
        }
    }

    /** Guarded by this: waiting sends take the free buffers; streams take turns, one datagram each. */
    void postWaiting() {
        assert Thread.holdsLock(this) : "under the monitor";
        Object w;
        while (!closed && freeTop > 0 && (w = waiting.poll()) != null) {
            if (w instanceof DatagramStream s) {
                ByteBuffer next = s.next();
                if (next != null) {
                    post(s.ah, s.qpn, s.qkey, next, false, 0, s);
                }
                if (s.hasWaiting()) {
                    waiting.add(s);
                } else {
                    s.unqueued();
                }
            } else {
                Single p = (Single) w;
                post(p.ah, p.qpn, p.qkey, p.data, p.withImmediate, p.immediate, p.sink);
            }
        }
    }

    /** {@return why sends fail now} */
    synchronized Throwable closedError() {
        return closedCause != null ? closedCause : new IllegalStateException("closed");
    }

    /** {@return whether sends are refused; guarded by this} */
    boolean closed() {
        assert Thread.holdsLock(this) : "under the monitor";
        return closed;
    }

    /** Refuses new sends from now on; any thread. */
    synchronized void markClosed(Throwable cause) {
        if (!closed) {
            closed = true;
            closedCause = cause;
        }
    }

    /**
     * Completion loop, at teardown: every send in flight or waiting fails with {@code end}.
     *
     * @param end the failure
     */
    void failAll(Throwable end) {
        java.util.List<Object> failed = new java.util.ArrayList<>();
        synchronized (this) {
            for (int i = 0; i < inFlight.length; i++) {
                if (inFlight[i] != null) {
                    failed.add(inFlight[i]);
                    inFlight[i] = null;
                }
            }
            Object w;
            while ((w = waiting.poll()) != null) {
                failed.add(w instanceof Single p ? p.sink : w);
            }
            for (Object o : failed) {
                if (o instanceof DatagramStream s) {
                    s.fail(end);
                }
            }
            // Streams with nothing in flight or waiting (a source that has not emitted yet) end too.
            for (DatagramStream s : streams.toArray(new DatagramStream[0])) {
                s.fail(end);
            }
        }
        for (Object o : failed) {
            if (o instanceof MonoSink<?> sink) {
                sink.error(end);
            }
        }
    }
}
