package rdmaflux.samples.bench;

import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import reactor.core.Disposable;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaServer;

/**
 * Send/receive ping-pong through the reactive API, for comparison with ib_send_lat: the client sends a
 * message, an {@link RdmaServer} in this process echoes it, the client waits for the echo. Everything
 * the API does per message (credits, Reactor signals, hops to the scheduler) is inside the time.
 */
final class ReactiveLatency {
    private ReactiveLatency() {
    }

    /**
     * @param address the RDMA interface's address (port 0: any)
     * @param size message size
     * @param warmup untimed round trips first
     * @param iters timed round trips
     * @param timeout the longest wait for any step or echo
     * @return timestamps and the heap bytes all threads allocated per message while timed
     */
    static VerbsTests.Latency run(InetSocketAddress address, int size, int warmup, int iters, Duration timeout) {
        ConnectionOptions options = ConnectionOptions.defaults().toBuilder().bufferSize(Math.max(size, 64)).build();
        RdmaServer server = RdmaServer.bind(address, options, AcceptFilter.ACCEPT_ALL).block(timeout);
        Disposable echo = server.connections().subscribe(c -> c.receive().concatMap(m -> {
            ByteBuffer copy = ByteBuffer.wrap(m.toByteArray());
            m.release();
            return c.send(copy);
        }).subscribe(null, e -> { }));
        RdmaConnection conn = null;
        try {
            conn = RdmaConnection.connect(server.address(), options).block(timeout);
            AtomicLong arrived = new AtomicLong();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread caller = Thread.currentThread();
            Disposable replies = conn.receive().subscribe(m -> {
                m.release();
                arrived.incrementAndGet();
                LockSupport.unpark(caller);
            }, e -> {
                failure.set(e);
                LockSupport.unpark(caller);
            });
            ByteBuffer message = ByteBuffer.allocate(size);
            long[] stamps = new long[iters + 1];
            com.sun.management.ThreadMXBean threads =
                    (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            long a0 = 0;
            RdmaConnection c = conn;
            for (int i = 0; i < warmup + iters; i++) {
                if (i == warmup) {
                    a0 = threads.getTotalThreadAllocatedBytes();
                }
                if (i >= warmup) {
                    stamps[i - warmup] = System.nanoTime();
                }
                c.send(message.duplicate()).subscribe(null, e -> {
                    failure.set(e);
                    LockSupport.unpark(caller);
                });
                long deadline = System.nanoTime() + timeout.toNanos();
                while (arrived.get() <= i) {
                    if (failure.get() != null) {
                        throw new IllegalStateException("reactive ping-pong failed: " + failure.get(), failure.get());
                    }
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("no echo within " + timeout);
                    }
                    LockSupport.parkNanos(1_000_000);
                }
            }
            stamps[iters] = System.nanoTime();
            long allocated = threads.getTotalThreadAllocatedBytes() - a0;
            replies.dispose();
            return new VerbsTests.Latency(stamps, allocated, 2L * iters);
        } finally {
            if (conn != null) {
                conn.disposeNow(timeout);
            }
            echo.dispose();
            server.disposeNow(timeout);
        }
    }
}
