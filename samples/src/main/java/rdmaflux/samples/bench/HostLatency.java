package rdmaflux.samples.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.net.InetSocketAddress;
import java.time.Duration;

import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.EventChannel;
import rdmaflux.verbs.PortSpace;
import rdmaflux.verbs.SendFlag;
import rdmaflux.verbs.SendOpcode;

/**
 * One end of a verbs pair whose two ends run on two hosts, for the cross-host latency rows of
 * {@link CrossHostBench}: the server end accepts one connection and answers, the client end times. The
 * loops are those of {@link VerbsTests} (perftest's opcodes, signaling and timestamps), split so that each
 * process runs one side; the pair is set up with the connection manager as perftest's {@code -R} does,
 * each side's buffer descriptor in the CM private data ({@link VerbsLink.Side}).
 */
final class HostLatency implements AutoCloseable {
    /** The latency tests, each with its C counterpart and the divisor of a round trip perftest uses. */
    enum Test {
        /** SEND ping-pong, as ib_send_lat. */
        SEND("send/recv latency p50", "ib_send_lat", 2),
        /** RDMA WRITE ping-pong, as ib_write_lat. */
        WRITE("RDMA write latency p50", "ib_write_lat", 2),
        /** One RDMA READ at a time, as ib_read_lat. */
        READ("RDMA read latency p50", "ib_read_lat", 1);

        final String metric;
        final String tool;
        final int rttFactor;

        Test(String metric, String tool, int rttFactor) {
            this.metric = metric;
            this.tool = tool;
            this.rttFactor = rttFactor;
        }
    }

    /** The largest message of the latency rows (4 KiB), the size of each half of a side's buffer. */
    static final int MAX_SIZE = 4096;
    private static final int SIGNALED = SendFlag.mask(SendFlag.SIGNALED);

    private final EventChannel channel;
    /** The memory of {@link #side}'s buffer, freed on {@link #close}. */
    private final Arena arena;
    private final Duration step;
    private final long waitNanos;
    private final boolean server;
    private final VerbsLink.Side side;
    /** Signaled sends not yet completed. */
    private int sends;
    /** Receives that completed in an earlier poll batch and were not yet handed out. */
    private int received;
    /** The JIT's milliseconds during the timed rounds of the last {@link #run}. */
    private long timedJitMillis;

    private HostLatency(EventChannel channel, CmId id, long maxSize, boolean server, Duration step) {
        this.channel = channel;
        this.arena = Arena.ofShared();
        try {
            this.side = VerbsLink.Side.cm(id, arena, maxSize);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
        this.server = server;
        this.step = step;
        this.waitNanos = step.toNanos();
    }

    /** A listening server end, before its peer connects: {@link #accept} waits for it. */
    static final class Listener implements AutoCloseable {
        private final EventChannel channel = EventChannel.create();
        private final Duration step;
        private boolean accepted;

        /**
         * @param address this host's RDMA address and the port to listen on
         * @param step the longest wait for the client's connect and any later event
         */
        Listener(InetSocketAddress address, Duration step) {
            this.step = step;
            try {
                CmId listener = channel.createId(PortSpace.TCP);
                listener.setReuseAddress(true);
                listener.bind(address);
                listener.listen(1);
            } catch (RuntimeException | Error e) {
                channel.close();
                throw e;
            }
        }

        /**
         * @param maxSize the largest message the tests will use
         * @return the connected server end, which takes over the event channel (and the listening id with it)
         */
        HostLatency accept(long maxSize) {
            CmEvent request = expect(channel, CmEventType.CONNECT_REQUEST, step);
            HostLatency end = new HostLatency(channel, request.id(), maxSize, true, step);
            accepted = true;
            try {
                end.side.peer = VerbsLink.decode(request.connection().privateData());
                request.id().accept(VerbsLink.params(end.side));
                expect(channel, CmEventType.ESTABLISHED, step);
                return end;
            } catch (RuntimeException | Error e) {
                end.release();
                throw e;
            }
        }

        /** Closes the event channel unless {@link #accept} handed it on (then the end closes it). */
        @Override
        public void close() {
            if (!accepted) {
                channel.close();
            }
        }
    }

    /**
     * Connects the client end to a {@link Listener} on another host.
     *
     * @param serverAddress the server's RDMA address and port
     * @param maxSize the largest message the tests will use
     * @param step the longest wait for any connection event
     * @return the connected client end
     * @throws Refused when the server rejected the connection (nobody listened on the port yet)
     */
    static HostLatency connect(InetSocketAddress serverAddress, long maxSize, Duration step) {
        EventChannel channel = EventChannel.create();
        HostLatency end = null;
        try {
            CmId id = channel.createId(PortSpace.TCP);
            id.resolveAddress(null, serverAddress, step);
            expect(channel, CmEventType.ADDR_RESOLVED, step);
            id.resolveRoute(step);
            expect(channel, CmEventType.ROUTE_RESOLVED, step);
            end = new HostLatency(channel, id, maxSize, false, step);
            id.connect(VerbsLink.params(end.side));
            CmEvent established = expect(channel, CmEventType.ESTABLISHED, step);
            end.side.peer = VerbsLink.decode(established.connection().privateData());
            return end;
        } catch (RuntimeException | Error e) {
            if (end != null) {
                end.release();
            } else {
                channel.close();
            }
            throw e;
        }
    }

    /** Frees everything without the disconnect handshake (after a failed setup). */
    private void release() {
        try {
            channel.close();
        } finally {
            arena.close();
        }
    }

    /**
     * The server's part of a test: answers the client's {@code warmup} untimed pings, then its {@code iters}
     * timed ones (none for reads, which need nothing of it).
     *
     * @param test the test the client runs
     * @param size message size
     * @param warmup the client's untimed rounds
     * @param iters the client's timed rounds
     * @return the JIT's milliseconds in this JVM while it answered the timed rounds ({@link CrossHostJit#millis})
     */
    long serve(Test test, int size, int warmup, int iters) {
        prepare(test, size);
        answer(test, size, 0, warmup);
        long c0 = CrossHostJit.millis();
        answer(test, size, warmup, iters);
        long jit = CrossHostJit.millis() - c0;
        drainSends();
        return jit;
    }

    /** Answers rounds {@code base} to {@code base + n - 1}; a write's round carries the byte {@code round + 1}. */
    private void answer(Test test, int size, int base, int n) {
        switch (test) {
            case SEND -> {
                for (int i = 0; i < n; i++) {
                    awaitReceive();
                    side.qp.postSend(side.send, 1);
                    sends++;
                }
            }
            case WRITE -> {
                long last = size - 1;
                for (int i = 0; i < n; i++) {
                    byte v = (byte) (base + i + 1);
                    awaitByte(side.half + last, v);
                    side.buf.set(ValueLayout.JAVA_BYTE, last, v);
                    side.qp.postSend(side.send, 1);
                    sends++;
                }
            }
            case READ -> { }
        }
    }

    /** {@return the JIT's milliseconds in this JVM during the timed rounds of the last {@link #run}} */
    long timedJitMillis() {
        return timedJitMillis;
    }

    /**
     * The client's part of a test: {@code warmup} untimed rounds, then {@code iters} timed ones.
     *
     * @return {@code iters + 1} timestamps, as {@link Stats#typicalMicros} takes them
     */
    long[] run(Test test, int size, int warmup, int iters) {
        prepare(test, size);
        long[] warm = new long[warmup + 1];
        long[] stamps = new long[iters + 1];
        // The untimed and timed rounds run the same method, so the timed part runs code profiled on its path.
        rounds(test, size, 0, warm, warmup);
        long c0 = CrossHostJit.millis();
        rounds(test, size, warmup, stamps, iters);
        timedJitMillis = CrossHostJit.millis() - c0;
        drainSends();
        return stamps;
    }

    private void prepare(Test test, int size) {
        VerbsLink.Side s = side;
        switch (test) {
            case SEND -> s.send.set(0, 0, SendOpcode.SEND, SIGNALED).sge(0, 0, s.mr, 0, size);
            // No zeroing of the half the peer writes: it is fresh (zeroed) memory, and the peer's first write
            // may already have landed when the server gets here.
            case WRITE -> s.send.set(0, 0, SendOpcode.RDMA_WRITE, SIGNALED).sge(0, 0, s.mr, 0, size)
                    .rdma(0, s.peer.address() + s.half, s.peer.rkey());
            case READ -> s.send.set(0, 0, SendOpcode.RDMA_READ, SIGNALED).sge(0, 0, s.mr, s.half, size)
                    .rdma(0, s.peer.address(), s.peer.rkey());
        }
    }

    /** Round {@code base + i} of a write ping-pong carries the byte {@code base + i + 1} in the last position. */
    private void rounds(Test test, int size, int base, long[] stamps, int n) {
        VerbsLink.Side s = side;
        long last = size - 1;
        for (int i = 0; i < n; i++) {
            stamps[i] = System.nanoTime();
            switch (test) {
                case SEND -> {
                    s.qp.postSend(s.send, 1);
                    sends++;
                    awaitReceive();
                }
                case WRITE -> {
                    byte v = (byte) (base + i + 1);
                    s.buf.set(ValueLayout.JAVA_BYTE, last, v);
                    s.qp.postSend(s.send, 1);
                    sends++;
                    awaitByte(s.half + last, v);
                }
                case READ -> {
                    s.qp.postSend(s.send, 1);
                    sends++;
                    drainSends();
                }
            }
        }
        stamps[n] = System.nanoTime();
    }

    private void awaitReceive() {
        if (received > 0) {
            received--;
            return;
        }
        long deadline = System.nanoTime() + waitNanos;
        for (;;) {
            int n = side.cq.poll(side.wc);
            for (int i = 0; i < n; i++) {
                check(i);
                if (side.wc.wrId(i) == VerbsLink.RECV_ID) {
                    side.repostReceive();
                    received++;
                } else {
                    sends--;
                }
            }
            if (received > 0) {
                received--;
                return;
            }
            if (n == 0 && System.nanoTime() > deadline) {
                throw new IllegalStateException("no receive completion within " + step);
            }
        }
    }

    private void awaitByte(long offset, byte v) {
        long deadline = System.nanoTime() + waitNanos;
        for (;;) {
            VarHandle.acquireFence(); // the device writes this memory behind the JIT's back
            if (side.buf.get(ValueLayout.JAVA_BYTE, offset) == v) {
                return;
            }
            reap();
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the peer's RDMA write did not arrive within " + step);
            }
        }
    }

    private void reap() {
        int n = side.cq.poll(side.wc);
        for (int i = 0; i < n; i++) {
            check(i);
            if (side.wc.wrId(i) == VerbsLink.RECV_ID) {
                throw new IllegalStateException("unexpected receive completion");
            }
            sends--;
        }
    }

    private void drainSends() {
        long deadline = System.nanoTime() + waitNanos;
        while (sends > 0) {
            reap();
            if (sends > 0 && System.nanoTime() > deadline) {
                throw new IllegalStateException("send completions missing after " + step);
            }
        }
    }

    private void check(int i) {
        if (!side.wc.isSuccess(i)) {
            throw new IllegalStateException("work request failed: " + side.wc.describe(i));
        }
    }

    private static CmEvent expect(EventChannel ch, CmEventType type, Duration step) {
        CmEvent e = ch.awaitEvent(step);
        if (e != null && e.type() == CmEventType.REJECTED && type == CmEventType.ESTABLISHED) {
            throw new Refused("expected " + type + ", got " + e);
        }
        if (e == null || e.type() != type) {
            throw new IllegalStateException("expected " + type + ", got " + (e == null ? "nothing within " + step : e));
        }
        return e;
    }

    /**
     * The client disconnects; the server waits for that (its peer may still read its memory until then)
     * and completes it.
     */
    @Override
    public void close() {
        try {
            if (server) {
                CmEvent e = channel.awaitEvent(step);
                if (e != null && e.type() == CmEventType.DISCONNECTED) {
                    side.id.disconnect();
                }
            } else {
                side.id.disconnect();
                channel.awaitEvent(step);
            }
        } finally {
            release();
        }
    }

    /** {@link #connect}'s connection was rejected: nobody listened on the port yet, or the server said no. */
    static final class Refused extends IllegalStateException {
        Refused(String message) {
            super(message);
        }
    }
}
