package rdmaflux.samples.bench;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Collections;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaServer;

/**
 * A SEND stream through the reactive API, for comparison with the verbs layer's SEND stream
 * ({@link VerbsTests#sendBandwidth}): the client sends {@code n} messages with
 * {@link RdmaConnection#send(Publisher)} (or, for the allocation row of that API, one
 * {@link RdmaConnection#send(ByteBuffer)} per message), an {@link RdmaServer} in this process takes them
 * from {@code receive()} and releases each at once. Everything the API does per message (copy into a send
 * buffer, credits, the receiver's repost, Reactor signals, hops to the scheduler) is inside the time.
 *
 * <p>The two sides run on their own {@link Sides threads}, so the heap each side allocates can be told apart
 * with {@code ThreadMXBean}: what {@code receive()}+{@code release()} costs is what the server's threads
 * allocate, what the send APIs cost is what the client's threads allocate.
 */
final class ReactiveStream implements AutoCloseable {
    /** Thread name prefix of the client side (its loops and its scheduler). */
    static final String CLIENT = "bench-stream-cli";
    /** Thread name prefix of the server side (its loops and its scheduler). */
    static final String SERVER = "bench-stream-srv";
    /** Thread name prefixes of a pair whose server side takes its signals on its completion loop. */
    private static final String LOOP_CLIENT = "bench-onloop-cli";
    private static final String LOOP_SERVER = "bench-onloop-srv";

    /**
     * One timed stream.
     *
     * @param messagesPerSecond messages / (first send subscribed → last message released by the receiver)
     * @param allAlloc heap bytes all threads of the JVM allocated per message while timed
     * @param clientAlloc heap bytes per message of the client's threads (its loops, its scheduler, the caller)
     * @param serverAlloc heap bytes per message of the server's threads (its loops, its scheduler)
     * @param deliveryAlloc heap bytes per message of the thread that ran the server's {@code receive()}
     *        subscriber, counted by that thread itself (exact) from the first message to the last; NaN unless
     *        one thread delivered both (a server on its completion loop)
     */
    record Run(double messagesPerSecond, double allAlloc, double clientAlloc, double serverAlloc,
               double deliveryAlloc) {
        /** {@return the payload rate in bytes per second for messages of {@code size} bytes} */
        double bytesPerSecond(int size) {
            return messagesPerSecond * size;
        }

        /**
         * The steady state of two runs that differ only in length: the heap bytes per message of the
         * {@code n - m} messages the longer one had more, so what a run costs once (its start, its end, a
         * subscription) cancels out; the rate is the longer run's.
         *
         * @param shorter a run of {@code m} messages
         * @param longer the same of {@code n > m} messages
         */
        static Run steady(Run shorter, int m, Run longer, int n) {
            return new Run(longer.messagesPerSecond, extra(shorter.allAlloc, m, longer.allAlloc, n),
                    extra(shorter.clientAlloc, m, longer.clientAlloc, n),
                    extra(shorter.serverAlloc, m, longer.serverAlloc, n), longer.deliveryAlloc);
        }

        private static double extra(double perShort, int m, double perLong, int n) {
            // Each side's bytes were counted whole and divided: multiplying back gives them exactly.
            return (Math.round(perLong * n) - Math.round(perShort * m)) / (double) (n - m);
        }
    }

    private final Duration timeout;
    private final AtomicLong arrived = new AtomicLong();
    private final AtomicLong finished = new AtomicLong();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private volatile long lastArrival;
    private volatile Thread waiter;
    /**
     * The counts at which the waiting thread wants to be woken: waking it per message would make it take a
     * CPU from the two sides' threads for every message, which on two (emulated) CPUs is what would be
     * measured.
     */
    private volatile long arrivedTarget = Long.MAX_VALUE;
    private volatile long finishedTarget = Long.MAX_VALUE;
    /**
     * The arrival counts at which the delivering thread reads its own allocation counter: exact for the
     * thread that reads it, where {@code ThreadMXBean#getThreadAllocatedBytes} of another thread adds that
     * thread's allocation buffer racily (HotSpot says it may count twice in rare cases).
     */
    private volatile long deliveryFrom = -1;
    private volatile long deliveryTo = -1;
    private volatile long deliveryBytesFrom;
    private volatile long deliveryBytesTo;
    private volatile Thread deliveryThreadFrom;
    private volatile Thread deliveryThreadTo;
    private final Sides client;
    private final Sides server;
    private RdmaServer rdmaServer;
    private Disposable sink;
    private RdmaConnection conn;

    private ReactiveStream(Duration timeout, boolean serverOnLoop) {
        this.timeout = timeout;
        this.client = new Sides(serverOnLoop ? LOOP_CLIENT : CLIENT);
        this.server = serverOnLoop ? new Sides(LOOP_SERVER, true) : new Sides(SERVER);
    }

    /**
     * Binds a server, connects to it, and makes sure messages of {@code maxSize} go as one SEND (no
     * rendezvous), as the verbs stream's do.
     *
     * @param address the RDMA interface's address (port 0: any)
     * @param maxSize the largest message to be sent
     * @param timeout the longest wait for any step, and for a stream to make progress
     * @return the connected pair
     */
    static ReactiveStream open(InetSocketAddress address, int maxSize, Duration timeout) {
        return open(address, maxSize, timeout, false);
    }

    /**
     * As {@link #open(InetSocketAddress, int, Duration)}, with the server's signals ({@code receive()}'s
     * messages) delivered on its completion loop ({@code Schedulers.immediate()}) if {@code serverOnLoop}.
     *
     * @param serverOnLoop whether the server side has no scheduler
     * @return the connected pair
     */
    static ReactiveStream open(InetSocketAddress address, int maxSize, Duration timeout, boolean serverOnLoop) {
        return open(address, maxSize, timeout, serverOnLoop, ConnectionOptions.defaults().recycledMessages());
    }

    /**
     * As {@link #open(InetSocketAddress, int, Duration, boolean)}, the server's messages
     * {@link ConnectionOptions#recycledMessages() recycled} if {@code recycled}.
     *
     * @param recycled whether the server's {@code receive()} emits the receive buffers' own objects
     * @return the connected pair
     */
    static ReactiveStream open(InetSocketAddress address, int maxSize, Duration timeout, boolean serverOnLoop,
            boolean recycled) {
        return open(address, maxSize, timeout, serverOnLoop, recycled, ConnectionOptions.defaults());
    }

    /**
     * As {@link #open(InetSocketAddress, int, Duration)}, both sides with the verbs SEND stream's depths
     * ({@code ib_send_bw}'s defaults): {@link VerbsLink#TX_DEPTH} sends in flight (send buffers and send
     * queue) and {@link VerbsLink#RX_DEPTH} receives posted (receive buffers, so as many credits), where the
     * defaults allow 32 of each: the rows that compare the reactive stream with the verbs one give both the
     * same pipeline.
     *
     * @return the connected pair
     */
    static ReactiveStream openAtVerbsDepth(InetSocketAddress address, int maxSize, Duration timeout) {
        return open(address, maxSize, timeout, false, ConnectionOptions.defaults().recycledMessages(),
                ConnectionOptions.builder().sendQueueDepth(VerbsLink.TX_DEPTH).sendBuffers(VerbsLink.TX_DEPTH)
                        .receiveBuffers(VerbsLink.RX_DEPTH).build());
    }

    private static ReactiveStream open(InetSocketAddress address, int maxSize, Duration timeout, boolean serverOnLoop,
            boolean recycled, ConnectionOptions depths) {
        ReactiveStream s = new ReactiveStream(timeout, serverOnLoop);
        try {
            ConnectionOptions base = depths.toBuilder()
                    .bufferSize(Math.max(ConnectionOptions.defaults().bufferSize(), maxSize)).build();
            ConnectionOptions serverBase = base.toBuilder().recycledMessages(recycled).build();
            s.rdmaServer = RdmaServer.bind(address, s.server.options(serverBase), AcceptFilter.ACCEPT_ALL)
                    .block(timeout);
            s.sink = s.rdmaServer.connections().subscribe(c -> c.receive().subscribe(m -> {
                // Only what the API hands out is touched: no slice, no copy, so the server's threads allocate
                // only what receive() and release() do.
                long now = System.nanoTime();
                m.release();
                s.lastArrival = now;
                long k = s.arrived.incrementAndGet();
                if (k == s.deliveryFrom) {
                    s.deliveryBytesFrom = Sides.THREADS.getCurrentThreadAllocatedBytes();
                    s.deliveryThreadFrom = Thread.currentThread();
                } else if (k == s.deliveryTo) {
                    s.deliveryBytesTo = Sides.THREADS.getCurrentThreadAllocatedBytes();
                    s.deliveryThreadTo = Thread.currentThread();
                }
                if (k >= s.arrivedTarget) {
                    LockSupport.unpark(s.waiter);
                }
            }, s::fail));
            s.conn = RdmaConnection.connect(s.rdmaServer.address(), s.client.options(base)).block(timeout);
            if (s.conn.eagerMessageSize() < maxSize) {
                throw new IllegalStateException("eager messages up to " + s.conn.eagerMessageSize() + " B: "
                        + Row.sizeText(maxSize) + " would go by rendezvous, not as one SEND");
            }
            return s;
        } catch (RuntimeException e) {
            s.close();
            throw e;
        }
    }

    private void fail(Throwable e) {
        failure.compareAndSet(null, e);
        LockSupport.unpark(waiter);
    }

    /**
     * Streams {@code n} messages of {@code size} bytes with one {@code send(Publisher)} and waits until the
     * receiver has released all of them and the send completed. The source is {@code Flux.fromIterable}
     * over {@code n} copies of one buffer: an ordinary Reactor source (synchronously fusable, as
     * {@code Flux.range}, {@code fromArray} and their {@code map}s are) that allocates nothing per message.
     *
     * @return the rate and the heap bytes per message, all threads and each side's
     */
    Run stream(int size, int n) {
        Flux<ByteBuffer> source = Flux.fromIterable(Collections.nCopies(n, ByteBuffer.allocateDirect(size)));
        return timed(size, n, 1, () -> conn.send(source).subscribe(new Done(this)));
    }

    /**
     * Sends {@code n} messages of {@code size} bytes, one {@code send(ByteBuffer)} each, at most
     * {@code window} not yet completed, and waits until the receiver has released all of them.
     *
     * @return the rate and the heap bytes per message, all threads and each side's
     */
    Run singles(int size, int n, int window) {
        ByteBuffer message = ByteBuffer.allocateDirect(size);
        // One subscriber for every send: it only counts, so the loop itself allocates nothing per message
        // and the client's bytes are what send(ByteBuffer) and its Mono allocate.
        Done done = new Done(this);
        return timed(size, n, n, () -> {
            long base = finished.get();
            for (int i = 0; i < n; i++) {
                long progress = System.nanoTime();
                // Wait for a free place in the window: parked, so the driving thread leaves the CPUs to the
                // loops; woken when half the window has completed, so it does not wake for every message.
                while (i - (finished.get() - base) >= window) {
                    finishedTarget = base + i - window / 2 + 1;
                    if (i - (finished.get() - base) < window) {
                        break;
                    }
                    check(size);
                    if (System.nanoTime() - progress > timeout.toNanos()) {
                        throw new IllegalStateException("send(ByteBuffer) of " + Row.sizeText(size)
                                + ": no send completed within " + timeout);
                    }
                    LockSupport.parkNanos(10_000_000);
                }
                conn.send(message).subscribe(done);
            }
        });
    }

    private Run timed(int size, int n, int sends, Runnable start) {
        waiter = Thread.currentThread();
        long base = arrived.get();
        long doneBase = finished.get();
        client.include(Thread.currentThread());
        Sides.Counter c0 = client.counter();
        Sides.Counter s0 = server.counter();
        c0.mark();
        s0.mark();
        long all0 = Sides.THREADS.getTotalThreadAllocatedBytes();
        deliveryThreadFrom = null;
        deliveryThreadTo = null;
        deliveryFrom = base + 1;
        deliveryTo = base + n;
        CpuTime.start();
        long t0 = System.nanoTime();
        start.run();
        arrivedTarget = base + n;
        long seen = base;
        long progress = System.nanoTime();
        while (arrived.get() < base + n) {
            check(size);
            long now = arrived.get();
            if (now != seen) {
                seen = now;
                progress = System.nanoTime();
            } else if (System.nanoTime() - progress > timeout.toNanos()) {
                throw new IllegalStateException("stream of " + Row.sizeText(size) + ": " + (now - base) + " of " + n
                        + " messages after " + timeout + " without progress");
            }
            LockSupport.parkNanos(10_000_000);
        }
        long t1 = lastArrival;
        CpuTime.stop();
        // The send side's completions (one for the stream, or one per message) end the run, so their cost
        // is in the allocation too.
        finishedTarget = doneBase + sends;
        long deadline = System.nanoTime() + timeout.toNanos();
        while (finished.get() < doneBase + sends) {
            check(size);
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the sends of " + Row.sizeText(size) + " did not complete within "
                        + timeout);
            }
            LockSupport.parkNanos(10_000_000);
        }
        long all = Sides.THREADS.getTotalThreadAllocatedBytes() - all0;
        long cl = c0.since();
        long sv = s0.since();
        Thread d = deliveryThreadFrom;
        double delivery = n > 1 && d != null && d == deliveryThreadTo
                ? (double) (deliveryBytesTo - deliveryBytesFrom) / (n - 1) : Double.NaN;
        return new Run(n / ((t1 - t0) / 1e9), (double) all / n, (double) cl / n, (double) sv / n, delivery);
    }

    private void check(int size) {
        Throwable f = failure.get();
        if (f != null) {
            throw new IllegalStateException("stream of " + Row.sizeText(size) + " failed: " + f, f);
        }
    }

    @Override
    public void close() {
        if (conn != null) {
            conn.disposeNow(timeout);
        }
        if (sink != null) {
            sink.dispose();
        }
        if (rdmaServer != null) {
            rdmaServer.disposeNow(timeout);
        }
        client.close();
        server.close();
    }

    /**
     * The end of a send (one for a stream, one per {@code send(ByteBuffer)}): counts it, or records the
     * failure. One instance serves many Monos, which is why it keeps no subscription.
     */
    private static final class Done implements CoreSubscriber<Void> {
        private final ReactiveStream owner;

        Done(ReactiveStream owner) {
            this.owner = owner;
        }

        @Override
        public void onSubscribe(Subscription s) {
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(Void v) {
        }

        @Override
        public void onError(Throwable t) {
            owner.fail(t);
        }

        @Override
        public void onComplete() {
            if (owner.finished.incrementAndGet() >= owner.finishedTarget) {
                LockSupport.unpark(owner.waiter);
            }
        }
    }

    /**
     * {@code n} times the same item, on demand: a source that allocates nothing per message, so what the
     * API's threads allocate is the API's. For {@code send}: the buffer is never modified, and {@code send}
     * copies the bytes between its position and limit without moving them, so the same one can be handed
     * over again.
     *
     * @param <T> the item's type
     */
    static final class Repeat<T> implements Publisher<T> {
        private final T message;
        private final long n;

        /**
         * @param message the item
         * @param n how many times
         */
        Repeat(T message, long n) {
            this.message = message;
            this.n = n;
        }

        @Override
        public void subscribe(Subscriber<? super T> s) {
            s.onSubscribe(new Emitter<>(s, message, n));
        }
    }

    /** The subscription of {@link Repeat}: emits while there is demand, re-entrant calls queue as demand. */
    private static final class Emitter<T> implements Subscription {
        private final Subscriber<? super T> s;
        private final T message;
        private final AtomicLong demand = new AtomicLong();
        private long left;
        private volatile boolean cancelled;

        Emitter(Subscriber<? super T> s, T message, long n) {
            this.s = s;
            this.message = message;
            this.left = n;
        }

        @Override
        public void request(long k) {
            if (k <= 0 || demand.getAndAdd(k) != 0) {
                return; // the thread already emitting takes this demand too (rule 3.3: no recursion)
            }
            long missed = k;
            while (true) {
                long emitted = 0;
                while (emitted < missed && left > 0 && !cancelled) {
                    left--;
                    emitted++;
                    s.onNext(message);
                }
                if (left == 0 && !cancelled) {
                    cancelled = true;
                    s.onComplete();
                    return;
                }
                if (cancelled) {
                    return;
                }
                missed = demand.addAndGet(-emitted);
                if (missed == 0) {
                    return;
                }
            }
        }

        @Override
        public void cancel() {
            cancelled = true;
        }
    }
}
