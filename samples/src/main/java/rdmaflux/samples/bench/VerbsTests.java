package rdmaflux.samples.bench;

import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import rdmaflux.verbs.ExtendedSendQueue;
import rdmaflux.verbs.SendFlag;
import rdmaflux.verbs.SendOpcode;
import rdmaflux.verbs.WorkCompletions;

/**
 * The latency and bandwidth loops on the verbs layer, written like perftest's: the same depths, the
 * same signaling, the same timestamps. On a pair made by {@link VerbsLink#openExtended} the streams post
 * through {@link ExtendedSendQueue} ({@code ibv_wr_*}) instead of {@code ibv_post_send}. Inside the timed part they only fill pre-allocated work requests,
 * post, poll and touch registered memory, so they allocate nothing; the heap allocation of both threads
 * is measured around that part and reported per message, and the process's CPU time around the calling
 * thread's timed part ({@link CpuTime}, for {@link CpuTime#take}).
 */
final class VerbsTests {
    private static final int SIGNALED = SendFlag.mask(SendFlag.SIGNALED);
    private static final int READ_WARM_CHUNK = 10;
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private final VerbsLink link;
    private final long waitNanos;
    private final SidePoll clientPoll;
    private final SidePoll serverPoll;
    private final boolean pin;
    /**
     * Whether the spin loops call {@link Thread#onSpinWait()} (x86 PAUSE) when a poll finds nothing.
     * Off for the comparison, because perftest's loops do not; see {@code docs/benchmarks.md} for why it
     * matters so much under qemu's TCG (PAUSE hands the emulator thread to the other virtual CPU).
     */
    volatile boolean spinHint;

    /**
     * @param link the connected pair
     * @param wait the longest wait for any single completion or peer write before the test fails
     * @param pin run the server side on CPU 1 (the caller pins the client side itself)
     */
    VerbsTests(VerbsLink link, Duration wait, boolean pin) {
        this.link = link;
        this.pin = pin;
        this.waitNanos = wait.toNanos();
        this.clientPoll = new SidePoll(this, link.client, waitNanos);
        this.serverPoll = new SidePoll(this, link.server, waitNanos);
        THREADS.getCurrentThreadAllocatedBytes(); // the first call initialises the bean; keep that out of loops
    }

    /**
     * A latency run: {@code iters + 1} timestamps (each iteration's start, then the end) and the bytes
     * both threads allocated in the timed part.
     *
     * @param stamps the timestamps
     * @param allocatedBytes heap bytes allocated by the client and server threads while timed
     * @param messages messages sent while timed (both directions)
     */
    record Latency(long[] stamps, long allocatedBytes, long messages) {
        double allocPerMessage() {
            return (double) allocatedBytes / messages;
        }
    }

    /**
     * A bandwidth run.
     *
     * @param bytesPerSecond payload bytes over the time from the first post to the last completion
     * @param allocatedBytes heap bytes allocated by the client and server threads while timed
     * @param messages messages sent while timed
     */
    record Bandwidth(double bytesPerSecond, long allocatedBytes, long messages) {
        double allocPerMessage() {
            return (double) allocatedBytes / messages;
        }
    }

    static long allocated() {
        return THREADS.getCurrentThreadAllocatedBytes();
    }

    /** SEND ping-pong, as ib_send_lat: the client sends, the server answers each message with one of its own. */
    Latency sendLatency(int size, int warmup, int iters) {
        VerbsLink.Side c = link.client;
        VerbsLink.Side s = link.server;
        c.send.set(0, 0, SendOpcode.SEND, SIGNALED).sge(0, 0, c.mr, 0, size);
        s.send.set(0, 0, SendOpcode.SEND, SIGNALED).sge(0, 0, s.mr, 0, size);
        long[] warm = new long[warmup + 1];
        long[] stamps = new long[iters + 1];
        long[] serverAlloc = new long[1];
        // The warmup and the timed part run the same method, so the compiled code the timed part runs was
        // profiled on the same path (a deoptimisation would re-allocate scalar-replaced objects).
        long clientAlloc = onBoth(() -> {
            sendPongs(warmup);
            long a0 = allocated();
            sendPongs(iters);
            serverAlloc[0] = allocated() - a0;
            serverPoll.drainSends();
        }, () -> {
            sendPings(warm, warmup);
            CpuTime.start();
            long a0 = allocated();
            sendPings(stamps, iters);
            long a = allocated() - a0;
            CpuTime.stop();
            clientPoll.drainSends();
            return a;
        });
        return new Latency(stamps, clientAlloc + serverAlloc[0], 2L * iters);
    }

    private void sendPings(long[] stamps, int n) {
        VerbsLink.Side c = link.client;
        SidePoll p = clientPoll;
        for (int i = 0; i < n; i++) {
            stamps[i] = System.nanoTime();
            c.qp.postSend(c.send, 1);
            p.sends++;
            p.awaitReceive();
        }
        stamps[n] = System.nanoTime();
    }

    private void sendPongs(int n) {
        VerbsLink.Side s = link.server;
        SidePoll p = serverPoll;
        for (int i = 0; i < n; i++) {
            p.awaitReceive();
            s.qp.postSend(s.send, 1);
            p.sends++;
        }
    }

    /**
     * RDMA WRITE ping-pong, as ib_write_lat: each side writes into the other's buffer and spins on the
     * last byte of its own until the peer's write lands.
     */
    Latency writeLatency(int size, int warmup, int iters) {
        VerbsLink.Side c = link.client;
        VerbsLink.Side s = link.server;
        c.buf.asSlice(c.half, size).fill((byte) 0);
        s.buf.asSlice(s.half, size).fill((byte) 0);
        c.send.set(0, 0, SendOpcode.RDMA_WRITE, SIGNALED).sge(0, 0, c.mr, 0, size)
                .rdma(0, c.peer.address() + c.half, c.peer.rkey());
        s.send.set(0, 0, SendOpcode.RDMA_WRITE, SIGNALED).sge(0, 0, s.mr, 0, size)
                .rdma(0, s.peer.address() + s.half, s.peer.rkey());
        long[] warm = new long[warmup + 1];
        long[] stamps = new long[iters + 1];
        long[] serverAlloc = new long[1];
        long clientAlloc = onBoth(() -> {
            writePongs(size, 0, warmup);
            long a0 = allocated();
            writePongs(size, warmup, iters);
            serverAlloc[0] = allocated() - a0;
            serverPoll.drainSends();
        }, () -> {
            writePings(size, 0, warm, warmup);
            CpuTime.start();
            long a0 = allocated();
            writePings(size, warmup, stamps, iters);
            long a = allocated() - a0;
            CpuTime.stop();
            clientPoll.drainSends();
            return a;
        });
        return new Latency(stamps, clientAlloc + serverAlloc[0], 2L * iters);
    }

    /** Round {@code base + i} carries the byte {@code base + i + 1} in the last position. */
    private void writePings(int size, int base, long[] stamps, int n) {
        VerbsLink.Side c = link.client;
        SidePoll p = clientPoll;
        long last = size - 1;
        for (int i = 0; i < n; i++) {
            byte v = (byte) (base + i + 1);
            stamps[i] = System.nanoTime();
            c.buf.set(ValueLayout.JAVA_BYTE, last, v);
            c.qp.postSend(c.send, 1);
            p.sends++;
            p.awaitByte(c.half + last, v);
        }
        stamps[n] = System.nanoTime();
    }

    private void writePongs(int size, int base, int n) {
        VerbsLink.Side s = link.server;
        SidePoll p = serverPoll;
        long last = size - 1;
        for (int i = 0; i < n; i++) {
            byte v = (byte) (base + i + 1);
            p.awaitByte(s.half + last, v);
            s.buf.set(ValueLayout.JAVA_BYTE, last, v);
            s.qp.postSend(s.send, 1);
            p.sends++;
        }
    }

    /** RDMA READ, as ib_read_lat: one read at a time, each timed from post to completion. */
    Latency readLatency(int size, int warmup, int iters) {
        VerbsLink.Side c = link.client;
        c.send.set(0, 0, SendOpcode.RDMA_READ, SIGNALED).sge(0, 0, c.mr, c.half, size)
                .rdma(0, c.peer.address(), c.peer.rkey());
        long[] stamps = new long[iters + 1];
        // Reads are quick, so warm up in many short calls: the loop method itself then gets compiled
        // (invocation count), not just the methods it calls.
        long[] warm = new long[READ_WARM_CHUNK + 1];
        for (int w = 0; w < warmup; w += READ_WARM_CHUNK) {
            reads(warm, Math.min(READ_WARM_CHUNK, warmup - w));
        }
        long allocated = withSpinningPeer(() -> {
            CpuTime.start();
            long a0 = allocated();
            reads(stamps, iters);
            long a = allocated() - a0;
            CpuTime.stop();
            return a;
        });
        return new Latency(stamps, allocated, iters);
    }

    private void reads(long[] stamps, int n) {
        VerbsLink.Side c = link.client;
        SidePoll p = clientPoll;
        for (int i = 0; i < n; i++) {
            stamps[i] = System.nanoTime();
            c.qp.postSend(c.send, 1);
            p.sends++;
            p.drainSends();
        }
        stamps[n] = System.nanoTime();
    }

    /**
     * RDMA WRITE stream, as ib_write_bw: up to TX_DEPTH in flight, one in CQ_MOD signaled; one message per
     * post, through the pair's post API.
     */
    Bandwidth writeBandwidth(int size, int messages) {
        VerbsLink.Side c = link.client;
        long[] allocated = new long[1];
        double rate = withSpinningPeer(() -> {
            CpuTime.start();
            long a0 = allocated();
            double r = stream(c, SendOpcode.RDMA_WRITE, size, messages);
            allocated[0] = allocated() - a0;
            CpuTime.stop();
            return r;
        });
        return new Bandwidth(rate, allocated[0], messages);
    }

    /** SEND stream, as ib_send_bw: the server keeps RX_DEPTH receives posted and reposts each one consumed. */
    Bandwidth sendBandwidth(int size, int messages) {
        VerbsLink.Side c = link.client;
        VerbsLink.Side s = link.server;
        long[] serverAlloc = new long[1];
        long[] clientAlloc = new long[1];
        double rate = onBoth(() -> {
            long a0 = allocated();
            receives(messages);
            serverAlloc[0] = allocated() - a0;
        }, () -> {
            CpuTime.start();
            long a0 = allocated();
            double r = stream(c, SendOpcode.SEND, size, messages);
            clientAlloc[0] = allocated() - a0;
            CpuTime.stop();
            return r;
        });
        return new Bandwidth(rate, clientAlloc[0] + serverAlloc[0], messages);
    }

    private void receives(int n) {
        SidePoll p = serverPoll;
        for (int i = 0; i < n; i++) {
            p.awaitReceive();
        }
    }

    /** {@return bytes per second from the first post to the last completion} */
    private double stream(VerbsLink.Side c, SendOpcode opcode, int size, int messages) {
        WorkCompletions wc = c.wc;
        long remote = c.peer.address() + c.half;
        int posted = 0;
        int completed = 0;
        long deadline = 0;
        long start = System.nanoTime();
        long end = start;
        while (completed < messages) {
            while (posted < messages && posted - completed < VerbsLink.TX_DEPTH) {
                boolean signaled = (posted + 1) % VerbsLink.CQ_MOD == 0 || posted == messages - 1;
                if (c.sq != null) {
                    postExtended(c.sq, c, opcode, posted, signaled, size, remote);
                } else {
                    c.send.set(0, posted, opcode, signaled ? SIGNALED : 0).sge(0, 0, c.mr, 0, size);
                    if (opcode == SendOpcode.RDMA_WRITE) {
                        c.send.rdma(0, remote, c.peer.rkey());
                    }
                    c.qp.postSend(c.send, 1);
                }
                posted++;
            }
            int n = c.cq.poll(wc);
            if (n == 0) {
                long now = System.nanoTime();
                if (deadline == 0) {
                    deadline = now + waitNanos;
                } else if (now > deadline) {
                    throw new IllegalStateException("no send completion within the wait: " + completed + " of "
                            + messages + " completed");
                }
                continue;
            }
            deadline = 0;
            for (int i = 0; i < n; i++) {
                SidePoll.check(wc, i);
                // A signaled completion also retires the unsignaled requests posted before it.
                completed = (int) wc.wrId(i) + 1;
            }
            end = System.nanoTime();
        }
        return (double) size * messages / ((end - start) / 1e9);
    }

    /**
     * One message through the extended post API, in the order of perftest's own {@code ibv_wr_*} path
     * (its {@code new_post_send}, one request per batch): start, id, flags, operation, SGE, complete.
     */
    private static void postExtended(ExtendedSendQueue sq, VerbsLink.Side c, SendOpcode opcode, int id,
                                     boolean signaled, int size, long remote) {
        sq.start();
        sq.wrId(id).flags(signaled ? SIGNALED : 0);
        if (opcode == SendOpcode.RDMA_WRITE) {
            sq.rdmaWrite(c.peer.rkey(), remote);
        } else {
            sq.send();
        }
        sq.sge(c.mr, 0, size);
        sq.complete();
    }

    /** A unit of work on the server thread. */
    @FunctionalInterface
    private interface ServerWork {
        void run();
    }

    /** A unit of work on the client (calling) thread. */
    @FunctionalInterface
    private interface ClientWork<T> {
        T run();
    }

    /**
     * Runs {@code client} while the server side's thread spins on its CQ, as perftest's server does in the
     * one-sided tests (ib_write_bw, ib_read_lat): it busy-polls for the end-of-test message meanwhile. On a
     * real machine an idle spinning peer costs the client nothing; under qemu's TCG both virtual CPUs share
     * one host thread, so it halves the client's share, and leaving it out would favour us.
     */
    private <T> T withSpinningPeer(ClientWork<T> client) {
        idle = false;
        return onBoth(() -> {
            VerbsLink.Side s = link.server;
            while (!idle) {
                if (s.cq.poll(s.wc) > 0) {
                    throw new IllegalStateException("unexpected completion on the idle side: " + s.wc.describe(0));
                }
            }
        }, () -> {
            try {
                return client.run();
            } finally {
                idle = true;
            }
        });
    }

    private volatile boolean idle;

    /**
     * Runs the server part on its own thread and the client part on this one, and fails if either failed.
     * The client part starts only once the server thread runs on its CPU, as perftest's client starts
     * against a server process already in its loop: a server thread still being created and moved to its
     * CPU while the client streams would leave the receive queue to run dry, and each RNR NAK then costs
     * the sender the connection manager's RNR timer (655 ms).
     */
    private <T> T onBoth(ServerWork server, ClientWork<T> client) {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch running = new CountDownLatch(1);
        Thread t = Thread.ofPlatform().name("bench-server").start(() -> {
            try {
                if (pin) {
                    Affinity.pin(1);
                }
                running.countDown();
                server.run();
            } catch (Throwable e) {
                failure.set(e);
            } finally {
                running.countDown();
            }
        });
        awaitRunning(running, t);
        T result;
        try {
            result = client.run();
        } catch (RuntimeException | Error e) {
            t.interrupt();
            throw e;
        }
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
        if (failure.get() != null) {
            throw new IllegalStateException("server side failed: " + failure.get(), failure.get());
        }
        return result;
    }

    private void awaitRunning(CountDownLatch running, Thread server) {
        try {
            if (!running.await(waitNanos, TimeUnit.NANOSECONDS)) {
                server.interrupt();
                throw new IllegalStateException("the server thread did not start within the wait");
            }
        } catch (InterruptedException e) {
            server.interrupt();
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
