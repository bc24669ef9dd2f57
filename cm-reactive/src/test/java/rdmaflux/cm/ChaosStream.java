package rdmaflux.cm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import reactor.core.Exceptions;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.RemoteBuffer;

/**
 * One stream of a chaos run or soak: a client that keeps a connection to a {@link HostsPeerMain} echo
 * server, reconnecting with {@link RdmaRetry#reconnect} whenever it fails, and checks everything it gets.
 * On each connection it sends rounds of {@value #WINDOW} sequence-numbered messages (small ones, and now and
 * then one beyond the eager size, which the peer fetches by RDMA READ) and checks every byte of every echo
 * and its order ({@link Payloads}); every fourth round it RDMA-WRITEs a tagged pattern over the region the
 * peer advertised and reads it back. After a random number of rounds it closes the connection itself and
 * connects again (churn).
 *
 * <p>It reports to {@link Events}: a connection up, each failure (of a connect or of an established
 * connection) with its exception, each end by churn, and each violation: a message lost, duplicated,
 * reordered or corrupted, a read-back that differs, or a wait that neither delivers nor fails within the
 * hang bound. The listener judges whether a failure is typed and explained by a fault.
 */
final class ChaosStream {
    static final int WINDOW = 8;

    /**
     * What a peer that closes leaves in the inbox: {@code receive()} completed. A killed peer process looks
     * the same, since its kernel closes its connections for it (docs/api.md, "A peer or port that goes away").
     */
    private static final Object PEER_CLOSED = new Object();

    /** What a stream reports; called on the stream's thread. */
    interface Events {
        void connected(ChaosStream s, long at);

        /**
         * @param failure the exception, or {@code null} when the peer closed the connection
         * @param established whether an established connection ended (else a connect failed)
         */
        void failed(ChaosStream s, long at, Throwable failure, boolean established);

        void closed(ChaosStream s, long at);

        void violation(ChaosStream s, String what);
    }

    final String name;
    final int from;
    final int to;
    private final InetSocketAddress remote;
    private final ConnectionOptions options;
    private final Duration hang;
    private final Events events;
    private final Random random;
    private final Sinks.One<Boolean> stopSignal = Sinks.one();
    private volatile boolean stopped;
    private Thread thread;
    /** Messages whose echo was checked, over all connections. */
    final AtomicLong messages = new AtomicLong();
    /** RDMA writes checked by a read. */
    final AtomicLong writes = new AtomicLong();
    final AtomicLong connections = new AtomicLong();

    /**
     * @param name for reports
     * @param from this host's number
     * @param to the peer's host number
     * @param remote the peer's echo server
     * @param options connection options
     * @param hang how long a wait may neither deliver nor fail
     * @param seed for sizes and churn
     * @param events where reports go
     */
    ChaosStream(String name, int from, int to, InetSocketAddress remote, ConnectionOptions options, Duration hang,
                long seed, Events events) {
        this.name = name;
        this.from = from;
        this.to = to;
        this.remote = remote;
        this.options = options;
        this.hang = hang;
        this.random = new Random(seed);
        this.events = events;
    }

    ChaosStream start() {
        thread = Thread.ofPlatform().daemon().name("chaos-" + name).start(this::run);
        return this;
    }

    /** Asks the stream to end its connection and stop; {@link #join} waits for it. */
    void stop() {
        stopped = true;
        stopSignal.tryEmitValue(true);
    }

    boolean join(Duration within) throws InterruptedException {
        return thread.join(within);
    }

    private void run() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment local = arena.allocate(HostsPeerMain.REGION, 4096);
            while (!stopped) {
                RdmaConnection c = connect();
                if (c == null) {
                    continue;
                }
                connections.incrementAndGet();
                events.connected(this, System.currentTimeMillis());
                try {
                    converse(c, local);
                    events.closed(this, System.currentTimeMillis());
                } catch (Failed f) {
                    if (f.getCause() == null) {
                        // The address the peer's server names this connection by, in its own log (HostsPeerMain).
                        System.err.println("chaos-stream: " + name + "'s connection from " + c.localAddress()
                                + " closed by its peer at " + System.currentTimeMillis());
                    }
                    events.failed(this, System.currentTimeMillis(), f.getCause(), true);
                } finally {
                    c.dispose();
                    try {
                        c.onDispose().block(hang);
                    } catch (RuntimeException e) {
                        events.violation(this, "dispose did not end within " + hang + ": " + e);
                    }
                }
            }
        } catch (Violation v) {
            events.violation(this, v.getMessage());
        } catch (RuntimeException | Error e) {
            events.violation(this, "the stream died: " + e);
        }
    }

    /**
     * Connects, retrying as the library's users do; {@code null} when stopped or after a final failure. Each
     * attempt must succeed or fail typed within the hang bound. The attempts together have no bound: a host
     * whose faults follow each other stays out of reach for as long as they last.
     */
    private RdmaConnection connect() {
        try {
            return Mono.defer(() -> RdmaConnection.connect(remote, options)
                            .timeout(hang, Mono.error(() -> new Violation("connecting to host " + to
                                    + " neither succeeded nor failed typed within " + hang)))
                            .doOnError(e -> {
                                if (!(e instanceof Violation)) {
                                    events.failed(this, System.currentTimeMillis(), e, false);
                                }
                            }))
                    .retryWhen(RdmaRetry.reconnect(Long.MAX_VALUE, Duration.ofMillis(200))
                            .maxBackoff(Duration.ofSeconds(2)))
                    .flux().takeUntilOther(stopSignal.asMono()).next()
                    .block();
        } catch (Violation v) {
            throw v;
        } catch (RuntimeException e) {
            if (Exceptions.unwrap(e) instanceof rdmaflux.verbs.RdmaException) {
                // Not retryable (already reported by doOnError); a new attempt after a pause.
                pause();
                return null;
            }
            throw new Violation("connecting to host " + to + " neither succeeded nor failed typed: " + e);
        }
    }

    private void converse(RdmaConnection c, MemorySegment local) throws Failed {
        LinkedBlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
        c.receiveBytes().subscribe(inbox::add, inbox::add, () -> inbox.add(PEER_CLOSED));
        ByteBuffer advert = ByteBuffer.wrap(take(inbox));
        RemoteBuffer region = RemoteBuffer.readFrom(advert);
        RegisteredBuffer buf;
        try {
            buf = c.register(local, AccessFlags.LOCAL_WRITE);
        } catch (IllegalStateException e) {
            // The connection ended after its advert arrived (its peer closed it, or a fault failed it), and a
            // closed connection refuses to register: how it ended reaches the inbox.
            take(inbox);
            throw new Violation("register refused (" + e + ") on a connection that goes on delivering");
        }
        int rounds = 20 + random.nextInt(60);
        int seq = 0;
        for (int round = 0; round < rounds && !stopped; round++) {
            List<Integer> sizes = new ArrayList<>(WINDOW);
            for (int i = 0; i < WINDOW; i++) {
                boolean large = i == 0 && round % 3 == 0;
                sizes.add(large ? c.eagerMessageSize() + 1 + random.nextInt(200_000) : 4 + random.nextInt(2_000));
            }
            int first = seq;
            c.send(Flux.range(0, WINDOW).map(i -> Payloads.message(first + i, sizes.get(i))))
                    .subscribe(null, inbox::add);
            for (int i = 0; i < WINDOW; i++, seq++) {
                try {
                    Payloads.verify(take(inbox), seq, sizes.get(i));
                } catch (AssertionError e) {
                    throw new Violation("connection " + connections.get() + ": " + e.getMessage());
                }
                messages.incrementAndGet();
            }
            if (round % 4 == 0) {
                writeAndReadBack(c, buf, region, (int) writes.get());
            }
        }
    }

    private void writeAndReadBack(RdmaConnection c, RegisteredBuffer buf, RemoteBuffer region, int tag)
            throws Failed {
        MemorySegment.copy(MemorySegment.ofBuffer(Payloads.message(tag, HostsPeerMain.REGION)), 0, buf.segment(), 0,
                HostsPeerMain.REGION);
        await(c.write(buf, region), "an RDMA write");
        buf.segment().fill((byte) 0);
        await(c.read(buf, region), "an RDMA read");
        try {
            Payloads.verify(buf.segment(), tag, HostsPeerMain.REGION);
        } catch (AssertionError e) {
            throw new Violation("RDMA write " + tag + " read back differently: " + e.getMessage());
        }
        writes.incrementAndGet();
    }

    private void await(Mono<Void> op, String what) throws Failed {
        try {
            op.toFuture().get(hang.toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new Violation(what + " neither completed nor failed within " + hang);
        } catch (java.util.concurrent.ExecutionException e) {
            // A write or read refused by a connection its peer closed in order is that close, as for a send.
            throw new Failed(closedInOrder(e.getCause()) ? null : e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Violation("interrupted");
        }
    }

    private byte[] take(LinkedBlockingQueue<Object> inbox) throws Failed {
        Object o;
        try {
            o = inbox.poll(hang.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Violation("interrupted");
        }
        if (o == null) {
            throw new Violation("connection " + connections.get() + " neither delivered an echo nor failed within "
                    + hang);
        }
        if (o == PEER_CLOSED || closedInOrder(o)) {
            throw new Failed(null);
        }
        if (o instanceof Throwable t) {
            throw new Failed(t);
        }
        return (byte[]) o;
    }

    /**
     * A send, write or read refused by a connection the peer closed in order, which can reach the stream before
     * {@code receive()}'s completion does: the connection refuses new operations as soon as it is closed.
     * It names no cause (a failed connection refuses with its failure), and this stream never disposes a
     * connection it still sends on.
     */
    private static boolean closedInOrder(Object o) {
        return o instanceof IllegalStateException e && e.getCause() == null
                && String.valueOf(e.getMessage()).startsWith("the connection is closed");
    }

    /** Before a new connect after one that cannot be retried: a fault's end, not a condition, is awaited. */
    private static void pause() {
        try {
            Thread.sleep(1_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return name + "(h" + from + "->h" + to + ": " + connections.get() + " connections, " + messages.get()
                + " messages, " + writes.get() + " writes)";
    }

    /** An established connection failed. */
    private static final class Failed extends Exception {
        Failed(Throwable cause) {
            super(cause);
        }
    }

    /** A broken invariant: the stream reports it and ends. */
    private static final class Violation extends RuntimeException {
        Violation(String what) {
            super(what);
        }
    }
}
