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
 * message, an {@link RdmaServer} ({@link Echo}, in this process or on another host) echoes it, the client
 * waits for the echo. Everything
 * the API does per message (credits, Reactor signals, hops to the scheduler) is inside the time.
 */
final class ReactiveLatency {
    private ReactiveLatency() {
    }

    /** An echo server: every message a connection receives goes back to its sender. */
    static final class Echo implements AutoCloseable {
        private final RdmaServer server;
        private final Disposable echo;
        private final Duration timeout;

        /**
         * @param address the RDMA interface's address (port 0: any)
         * @param size message size the clients send
         * @param timeout the longest wait for the bind and for the shutdown
         */
        Echo(InetSocketAddress address, int size, Duration timeout) {
            this(address, options(size), timeout);
        }

        /**
         * @param address the RDMA interface's address (port 0: any)
         * @param options the server's connection options
         * @param timeout the longest wait for the bind and for the shutdown
         */
        Echo(InetSocketAddress address, ConnectionOptions options, Duration timeout) {
            this(address, options, timeout, n -> { });
        }

        /**
         * @param address the RDMA interface's address (port 0: any)
         * @param options the server's connection options
         * @param timeout the longest wait for the bind and for the shutdown
         * @param received told the count of messages received so far on all connections after each one, on the
         *                 thread that received it, before its echo is sent
         */
        Echo(InetSocketAddress address, ConnectionOptions options, Duration timeout,
             java.util.function.LongConsumer received) {
            this.timeout = timeout;
            AtomicLong count = new AtomicLong();
            server = RdmaServer.bind(address, options, AcceptFilter.ACCEPT_ALL).block(timeout);
            echo = server.connections().subscribe(c -> c.receive().concatMap(m -> {
                ByteBuffer copy = ByteBuffer.wrap(m.toByteArray());
                m.release();
                received.accept(count.incrementAndGet());
                return c.send(copy);
            }).subscribe(null, e -> { }));
        }

        /** {@return the address the server listens on} */
        InetSocketAddress address() {
            return server.address();
        }

        @Override
        public void close() {
            echo.dispose();
            server.disposeNow(timeout);
        }
    }

    static ConnectionOptions options(int size) {
        return ConnectionOptions.builder().bufferSize(Math.max(size, 64)).build();
    }

    /**
     * Ping-pong against an echo server in this process.
     *
     * @param address the RDMA interface's address (port 0: any)
     * @param size message size
     * @param warmup untimed round trips first
     * @param iters timed round trips
     * @param timeout the longest wait for any step or echo
     * @return timestamps and the heap bytes all threads allocated per message while timed
     */
    static VerbsTests.Latency run(InetSocketAddress address, int size, int warmup, int iters, Duration timeout) {
        try (Echo echo = new Echo(address, size, timeout)) {
            return pingPong(echo.address(), size, warmup, iters, timeout);
        }
    }

    /**
     * Ping-pong against an {@link Echo} server, in this process or on another host.
     *
     * @param server the echo server's address
     * @param size message size
     * @param warmup untimed round trips first
     * @param iters timed round trips
     * @param timeout the longest wait for any step or echo
     * @return timestamps and the heap bytes this process's threads allocated per message while timed
     */
    static VerbsTests.Latency pingPong(InetSocketAddress server, int size, int warmup, int iters, Duration timeout) {
        return pingPong(server, size, warmup, iters, timeout, options(size), false);
    }

    /**
     * Ping-pong against an {@link Echo} server with the given options, on a connection of its own; records
     * the process's CPU time over the timed round trips ({@link CpuTime}).
     *
     * @param server the echo server's address
     * @param size message size
     * @param warmup untimed round trips first
     * @param iters timed round trips
     * @param timeout the longest wait for any step or echo
     * @param options the client connection's options
     * @param spin whether the calling thread spins ({@link Thread#onSpinWait()}) for each echo instead of
     *             parking until the subscriber wakes it, as the verbs layer's spin ping-pong does
     * @return timestamps and the heap bytes this process's threads allocated per message while timed
     */
    static VerbsTests.Latency pingPong(InetSocketAddress server, int size, int warmup, int iters, Duration timeout,
                                       ConnectionOptions options, boolean spin) {
        try (Client c = new Client(server, options, timeout)) {
            return c.pingPong(size, warmup, iters, spin);
        }
    }

    /**
     * A client connection to an {@link Echo} server that counts the echoes it receives, for ping-pongs
     * run one after the other on the same connection.
     *
     * <p>Threads: {@link #pingPong} on one thread at a time; the echoes arrive on the options' scheduler.
     */
    static final class Client implements AutoCloseable {
        private final RdmaConnection conn;
        private final Duration timeout;
        private final AtomicLong arrived = new AtomicLong();
        private final AtomicReference<Throwable> failure = new AtomicReference<>();
        private final Disposable replies;
        /** The thread to wake for each echo (the one in {@link #pingPong}), unless it spins. */
        private volatile Thread caller;
        /** Whether {@link #caller} spins for each echo: it needs no wake-up then (a call into the JVM each). */
        private volatile boolean spinning;
        /** What a {@link #driven} ping-pong does with each echo, on the thread that delivered it; else null. */
        private volatile Runnable onEcho;
        /** The JIT's milliseconds in this JVM during the timed round trips of the last {@link #driven} one. */
        private volatile long timedJitMillis;

        /**
         * Connects.
         *
         * @param server the echo server's address
         * @param options the connection's options
         * @param timeout the longest wait for the connection and for each echo
         */
        Client(InetSocketAddress server, ConnectionOptions options, Duration timeout) {
            this.timeout = timeout;
            conn = RdmaConnection.connect(server, options).block(timeout);
            replies = conn.receive().subscribe(m -> {
                m.release();
                arrived.incrementAndGet();
                Runnable next = onEcho;
                if (next != null) {
                    next.run();
                } else if (!spinning) {
                    LockSupport.unpark(caller);
                }
            }, e -> {
                failure.set(e);
                Runnable next = onEcho;
                if (next != null) {
                    next.run();
                }
                LockSupport.unpark(caller);
            });
        }

        /**
         * One ping-pong; records the process's CPU time over the timed round trips ({@link CpuTime}).
         *
         * @param size message size
         * @param warmup untimed round trips first
         * @param iters timed round trips
         * @param spin whether the calling thread spins ({@link Thread#onSpinWait()}) for each echo instead
         *             of parking until the subscriber wakes it
         * @return timestamps and the heap bytes this process's threads allocated per message while timed
         */
        VerbsTests.Latency pingPong(int size, int warmup, int iters, boolean spin) {
            caller = Thread.currentThread();
            spinning = spin;
            ByteBuffer message = ByteBuffer.allocate(size);
            long[] stamps = new long[iters + 1];
            com.sun.management.ThreadMXBean threads =
                    (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            long a0 = 0;
            long base = arrived.get();
            for (int i = 0; i < warmup + iters; i++) {
                if (i == warmup) {
                    CpuTime.start();
                    a0 = threads.getTotalThreadAllocatedBytes();
                }
                if (i >= warmup) {
                    stamps[i - warmup] = System.nanoTime();
                }
                conn.send(message.duplicate()).subscribe(null, e -> {
                    failure.set(e);
                    LockSupport.unpark(caller);
                });
                long deadline = System.nanoTime() + timeout.toNanos();
                while (arrived.get() - base <= i) {
                    if (failure.get() != null) {
                        throw new IllegalStateException("reactive ping-pong failed: " + failure.get(), failure.get());
                    }
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("no echo within " + timeout);
                    }
                    if (spin) {
                        Thread.onSpinWait();
                    } else {
                        LockSupport.parkNanos(1_000_000);
                    }
                }
            }
            stamps[iters] = System.nanoTime();
            long allocated = threads.getTotalThreadAllocatedBytes() - a0;
            CpuTime.stop();
            return new VerbsTests.Latency(stamps, allocated, 2L * iters);
        }

        /**
         * One ping-pong driven by the echoes, as a reactive application writes one: the subscriber that receives
         * an echo sends the next message, on the thread that delivered the echo, and no other thread of this
         * process runs for a round trip (the caller waits without waking until the last echo). Records the
         * process's CPU time over the timed round trips ({@link CpuTime}).
         *
         * @param size message size
         * @param warmup untimed round trips first
         * @param iters timed round trips
         * @return timestamps and the heap bytes this process's threads allocated per message while timed
         */
        VerbsTests.Latency driven(int size, int warmup, int iters) {
            ByteBuffer message = ByteBuffer.allocate(size);
            int total = warmup + iters;
            long[] stamps = new long[iters + 1];
            long[] allocatedFrom = {0};
            long[] jitFrom = {0};
            java.util.concurrent.CountDownLatch finished = new java.util.concurrent.CountDownLatch(1);
            com.sun.management.ThreadMXBean threads =
                    (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            long base = arrived.get();
            Runnable send = () -> conn.send(message.duplicate()).subscribe(null, e -> {
                failure.set(e);
                finished.countDown();
            });
            // k echoes have arrived: round trip k is next (timed ones from warmup on), or all are done.
            java.util.function.LongConsumer step = k -> {
                if (k == warmup) {
                    CpuTime.start();
                    allocatedFrom[0] = threads.getTotalThreadAllocatedBytes();
                    jitFrom[0] = CrossHostJit.millis();
                }
                if (k >= warmup) {
                    stamps[(int) (k - warmup)] = System.nanoTime();
                }
                if (k < total) {
                    send.run();
                } else {
                    CpuTime.stop();
                    allocatedFrom[0] = threads.getTotalThreadAllocatedBytes() - allocatedFrom[0];
                    timedJitMillis = CrossHostJit.millis() - jitFrom[0];
                    finished.countDown();
                }
            };
            onEcho = () -> {
                if (failure.get() != null) {
                    finished.countDown();
                } else {
                    step.accept(arrived.get() - base);
                }
            };
            try {
                step.accept(0);
                long seen = -1;
                while (!finished.await(timeout.toNanos(), java.util.concurrent.TimeUnit.NANOSECONDS)) {
                    long now = arrived.get();
                    if (now == seen) {
                        throw new IllegalStateException("no echo within " + timeout);
                    }
                    seen = now;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            } finally {
                onEcho = null;
            }
            if (failure.get() != null) {
                throw new IllegalStateException("reactive ping-pong failed: " + failure.get(), failure.get());
            }
            return new VerbsTests.Latency(stamps, allocatedFrom[0], 2L * iters);
        }

        /** {@return the JIT's milliseconds in this JVM during the timed round trips of the last {@link #driven}} */
        long timedJitMillis() {
            return timedJitMillis;
        }

        @Override
        public void close() {
            replies.dispose();
            conn.disposeNow(timeout);
        }
    }
}
