package rdmaflux.samples.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaServer;
import rdmaflux.cm.RegisteredBuffer;
import rdmaflux.verbs.AccessFlag;
import rdmaflux.verbs.AccessFlags;

/**
 * A stream of messages larger than the receive buffers through the reactive API, for comparison with
 * {@code ib_read_bw}: such messages go by rendezvous, the receiver RDMA-READs each one (docs/protocol.md
 * "Large messages"). The client sends {@code n} messages with {@code send(RegisteredBuffer)} out of one
 * registration with remote read (the zero-copy path: the peer reads them in place), up to
 * {@link #IN_FLIGHT} at a time; an {@link RdmaServer} in this process receives each one and releases it
 * at once. Everything the API does per message (descriptor, credit, the receiver's region and its
 * registration, the READ, the finished count back, Reactor signals) is inside the time.
 *
 * <p>With {@code applicationMemory}, the receiver reads into memory the bench supplies through
 * {@link ConnectionOptions#largeMessageMemory()}: slices of one segment allocated once, reused round-robin,
 * so what remains per message is the library's registration of the region and its own work.
 */
final class ReactiveLarge implements AutoCloseable {
    /** Sends subscribed at a time; credits and the large-message budget bound what is really in flight. */
    static final int IN_FLIGHT = 32;

    /** One timed stream. */
    record Run(double bytesPerSecond, double allocPerMessage) {
    }

    private final Duration timeout;
    private final Arena arena = Arena.ofShared();
    private final AtomicLong arrived = new AtomicLong();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private volatile long lastArrival;
    private volatile Thread waiter;
    private RdmaServer server;
    private Disposable sink;
    private RdmaConnection conn;
    private RegisteredBuffer source;

    private ReactiveLarge(Duration timeout) {
        this.timeout = timeout;
    }

    /**
     * Binds a server on {@code address}, connects to it with default options and registers the source.
     *
     * @param address the RDMA interface's address (port 0: any)
     * @param maxSize the largest message to be sent
     * @param timeout the longest wait for any step, and for a stream to make progress
     * @param applicationMemory whether large messages land in memory the bench supplies, reused
     * @return the connected pair
     */
    static ReactiveLarge open(InetSocketAddress address, int maxSize, Duration timeout, boolean applicationMemory) {
        ReactiveLarge l = new ReactiveLarge(timeout);
        try {
            ConnectionOptions options = ConnectionOptions.defaults();
            if (applicationMemory) {
                // The receiver holds at most budget / size messages (or one larger one); it receives and
                // releases in order, so budget / size + 1 slices reused in turn are never still in use.
                long budget = options.largeMessageBudget();
                MemorySegment pool = l.arena.allocate(budget + maxSize, 4096);
                AtomicLong next = new AtomicLong();
                options = options.toBuilder().largeMessageMemory(size -> {
                    long slots = budget / size + 1;
                    long slot = next.getAndIncrement() % slots;
                    return pool.asSlice(slot * size, size);
                }).build();
            }
            l.server = RdmaServer.bind(address, options, AcceptFilter.ACCEPT_ALL).block(timeout);
            l.sink = l.server.connections().subscribe(c -> c.receive().subscribe(m -> {
                long now = System.nanoTime();
                m.release();
                l.lastArrival = now;
                l.arrived.incrementAndGet();
                LockSupport.unpark(l.waiter);
            }, l::fail));
            l.conn = RdmaConnection.connect(l.server.address(), options).block(timeout);
            if (l.conn.eagerMessageSize() >= 65536) {
                throw new IllegalStateException("receive buffers of " + l.conn.eagerMessageSize()
                        + " B: 64 KiB messages would not go by rendezvous");
            }
            l.source = l.conn.register(l.arena.allocate(maxSize, 4096),
                    AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.REMOTE_READ));
            l.source.segment().fill((byte) 0x5a);
            return l;
        } catch (RuntimeException e) {
            l.close();
            throw e;
        }
    }

    private void fail(Throwable e) {
        failure.compareAndSet(null, e);
        LockSupport.unpark(waiter);
    }

    /**
     * Streams {@code n} messages of {@code size} bytes and waits until the receiver has all of them and
     * every send completed.
     *
     * @return payload bytes / (first send subscribed → last message delivered to the receiver), and the
     *         heap bytes all threads allocated per message over the stream
     */
    Run stream(int size, int n) {
        waiter = Thread.currentThread();
        long base = arrived.get();
        RegisteredBuffer message = source.slice(0, size);
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long a0 = threads.getTotalThreadAllocatedBytes();
        long t0 = System.nanoTime();
        CompletableFuture<Void> sent = Flux.range(0, n).flatMap(i -> conn.send(message), IN_FLIGHT).then().toFuture();
        long seen = base;
        long progress = System.nanoTime();
        while (arrived.get() < base + n) {
            Throwable f = failure.get();
            if (f == null && sent.isCompletedExceptionally()) {
                f = sent.exceptionNow();
            }
            if (f != null) {
                throw new IllegalStateException("large-message stream of " + Row.sizeText(size) + " failed: " + f, f);
            }
            long now = arrived.get();
            if (now != seen) {
                seen = now;
                progress = System.nanoTime();
            } else if (System.nanoTime() - progress > timeout.toNanos()) {
                throw new IllegalStateException("large-message stream of " + Row.sizeText(size) + ": "
                        + (now - base) + " of " + n + " messages after " + timeout + " without progress");
            }
            LockSupport.parkNanos(1_000_000);
        }
        long t1 = lastArrival;
        try {
            sent.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("sends of " + Row.sizeText(size) + " did not complete: " + e, e);
        }
        long allocated = threads.getTotalThreadAllocatedBytes() - a0;
        return new Run((double) size * n / ((t1 - t0) / 1e9), (double) allocated / n);
    }

    @Override
    public void close() {
        if (source != null) {
            source.close();
        }
        if (conn != null) {
            conn.disposeNow(timeout);
        }
        if (sink != null) {
            sink.dispose();
        }
        if (server != null) {
            server.disposeNow(timeout);
        }
        arena.close();
    }
}
