package rdmaflux.cm;

import rdmaflux.cm.internal.rc.Wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;

import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.CmEvent;
import rdmaflux.verbs.CmEventType;
import rdmaflux.verbs.CmId;
import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.ConnectionParameters;
import rdmaflux.verbs.EventChannel;
import rdmaflux.verbs.MemoryRegion;
import rdmaflux.verbs.PortSpace;
import rdmaflux.verbs.ProtectionDomain;
import rdmaflux.verbs.QpInitAttributes;
import rdmaflux.verbs.QpType;
import rdmaflux.verbs.QueuePair;
import rdmaflux.verbs.ReceiveRequests;
import rdmaflux.verbs.SendFlag;
import rdmaflux.verbs.SendOpcode;
import rdmaflux.verbs.SendRequests;
import rdmaflux.verbs.WcStatus;
import rdmaflux.verbs.WorkCompletions;

/**
 * Test fixture: a raw RC client written with the verbs layer only, which says whatever a test wants to
 * an rdmaflux server: any connect private data (a valid hello, or anything else), then SENDs with or
 * without immediate data, with any immediate value and of any size, and RDMA READ/WRITE with any key.
 * It keeps nothing of the protocol itself: no credits, no replies.
 *
 * <p>Single-threaded: the test's thread drives it, polling its CQ and its CM events with deadlines.
 * {@link #close()} destroys everything (the id owns the QP, CQ, PD and region made through it).
 */
final class HostilePeer implements AutoCloseable {
    /** Each buffer of {@link #BUFFERS}, and the largest SEND this peer can make. */
    static final int BUFFER = 64 * 1024;
    /** Receive buffers posted, for what the server may send (control messages, echoes). */
    static final int BUFFERS = 16;
    private static final long RECV = 1L << 40;

    private final Duration timeout;
    private final EventChannel channel;
    private final CmId id;
    private final Arena arena = Arena.ofShared();
    private final QueuePair qp;
    private final CompletionQueue cq;
    private final MemoryRegion mr;
    private final MemorySegment memory;
    private final SendRequests send = new SendRequests(1, 1);
    private final WorkCompletions wc = new WorkCompletions(1);
    private long nextWrId;
    private byte[] serverPrivateData;
    private int receivesCompleted;

    /**
     * Resolves the server's address and route and creates the QP, without connecting.
     *
     * @param server where an rdmaflux server listens
     * @param timeout the longest wait of each step
     */
    HostilePeer(InetSocketAddress server, Duration timeout) {
        this.timeout = timeout;
        channel = EventChannel.create();
        try {
            id = channel.createId(PortSpace.TCP);
            id.resolveAddress(null, server, timeout);
            expect(CmEventType.ADDR_RESOLVED);
            id.resolveRoute(timeout);
            expect(CmEventType.ROUTE_RESOLVED);
            id.setAckTimeout(14); // 67 ms before a retransmit: a send to a QP that is gone fails soon
            ProtectionDomain pd = id.context().allocateProtectionDomain();
            cq = id.context().createCompletionQueue(4 * BUFFERS, null, 0);
            qp = id.createQueuePair(pd, QpInitAttributes.builder(QpType.RC).completionQueue(cq)
                    .depth(BUFFERS, BUFFERS).sge(1, 1).build());
            memory = arena.allocate((long) BUFFER * (BUFFERS + 1), 4096);
            mr = pd.register(memory, AccessFlags.REMOTE_ALL);
            ReceiveRequests r = new ReceiveRequests(BUFFERS, 1);
            for (int i = 0; i < BUFFERS; i++) {
                r.set(i, RECV | i).sge(i, 0, mr, (long) BUFFER * (i + 1), BUFFER);
            }
            qp.postReceive(r, BUFFERS);
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
    }

    /**
     * A hello with any field values, encoded as {@link Wire#hello} would, without its range checks.
     *
     * @param magic the magic ({@link Wire#MAGIC} for a good one)
     * @param version the version byte
     * @param appLength the application data length field
     * @param credits the credits granted
     * @param bufferSize the buffer size field
     * @param total the length of the private data (at least 12; the rest is zeros)
     * @return the private data
     */
    static byte[] hello(int magic, int version, int appLength, int credits, int bufferSize, int total) {
        ByteBuffer b = ByteBuffer.allocate(Math.max(total, Wire.HEADER)).order(ByteOrder.BIG_ENDIAN);
        b.putInt(magic).put((byte) version).put((byte) appLength).putShort((short) credits).putInt(bufferSize);
        return java.util.Arrays.copyOf(b.array(), total);
    }

    /** {@return a valid hello granting {@link #BUFFERS} credits of {@link #BUFFER} bytes} */
    static byte[] goodHello() {
        return Wire.hello(BUFFERS, BUFFER, new byte[0]);
    }

    /**
     * Sends the connect request (the server's answer is an event: see {@link #expect}).
     *
     * @param privateData the private data, whatever it is
     */
    void connect(byte[] privateData) {
        // Transport retries 2: Soft-RoCE takes 7 for "forever", and a send to a QP that is gone must fail.
        id.connect(new ConnectionParameters(privateData, 1, 1, false, 2, 7, false, 0));
    }

    /**
     * Connects with a valid hello and waits for ESTABLISHED.
     *
     * @return this
     */
    HostilePeer connectWithGoodHello() {
        connect(goodHello());
        serverPrivateData = expect(CmEventType.ESTABLISHED).privateData();
        return this;
    }

    /** {@return the server's hello, as parsed from its accept private data} */
    Wire.Hello serverHello() {
        return Wire.parse(serverPrivateData);
    }

    /**
     * Waits for the next CM event.
     *
     * @param type the type it must have
     * @return the event
     */
    CmEvent expect(CmEventType type) {
        CmEvent e = channel.awaitEvent(timeout);
        assertNotNull(e, "no " + type + " within " + timeout);
        assertEquals(type, e.type(), e::toString);
        return e;
    }

    /**
     * Posts a SEND of {@code size} bytes (filled with {@code size}'s low byte) from its region.
     *
     * @param size the payload's length (up to {@link #BUFFER})
     * @param imm the immediate data, or {@code null} for a plain SEND
     * @return the work request id (its completion: {@link #awaitSend})
     */
    long send(int size, Integer imm) {
        memory.asSlice(0, size).fill((byte) size);
        long wrId = nextWrId++;
        send.set(0, wrId, imm == null ? SendOpcode.SEND : SendOpcode.SEND_WITH_IMM, SendFlag.mask(SendFlag.SIGNALED));
        if (size > 0) {
            send.sge(0, 0, mr, 0, size);
        }
        if (imm != null) {
            send.immediate(0, imm);
        }
        qp.postSend(send, 1);
        return wrId;
    }

    /**
     * Posts a SEND whose payload is given.
     *
     * @param payload the bytes
     * @param imm the immediate data, or {@code null}
     * @return the work request id
     */
    long send(byte[] payload, Integer imm) {
        long wrId = nextWrId++;
        MemorySegment.copy(payload, 0, memory, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, payload.length);
        send.set(0, wrId, imm == null ? SendOpcode.SEND : SendOpcode.SEND_WITH_IMM, SendFlag.mask(SendFlag.SIGNALED));
        if (payload.length > 0) {
            send.sge(0, 0, mr, 0, payload.length);
        }
        if (imm != null) {
            send.immediate(0, imm);
        }
        qp.postSend(send, 1);
        return wrId;
    }

    /**
     * Posts an RDMA READ or WRITE of {@code length} bytes at any remote address, under any key.
     *
     * @param write whether to write (else read)
     * @param remoteAddress the address on the server
     * @param rkey the key, forged or stale
     * @param length the bytes
     * @return the work request id
     */
    long rdma(boolean write, long remoteAddress, int rkey, int length) {
        long wrId = nextWrId++;
        send.set(0, wrId, write ? SendOpcode.RDMA_WRITE : SendOpcode.RDMA_READ, SendFlag.mask(SendFlag.SIGNALED))
                .sge(0, 0, mr, 0, length).rdma(0, remoteAddress, rkey);
        qp.postSend(send, 1);
        return wrId;
    }

    /** {@return the address of this peer's registered memory, which {@link #rkey()} opens remotely} */
    long address() {
        return mr.address();
    }

    /** {@return the key of this peer's registered memory} */
    int rkey() {
        return mr.rkey();
    }

    /**
     * Waits for the next send-side completion, skipping (and counting) receives.
     *
     * @return its status
     */
    WcStatus awaitSend() {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (cq.poll(wc) == 1) {
                if ((wc.wrId(0) & RECV) == 0) {
                    return wc.status(0);
                }
                receivesCompleted++;
            } else {
                Thread.onSpinWait();
            }
        }
        throw new AssertionError("no send completion within " + timeout);
    }

    /** {@return receive completions seen while waiting for sends (the server's control messages)} */
    int receivesCompleted() {
        return receivesCompleted;
    }

    /**
     * Waits for a CM event of {@code type}, skipping others.
     *
     * @param type the type
     * @param within the longest wait
     * @return whether it came
     */
    boolean awaitEvent(CmEventType type, Duration within) {
        long deadline = System.nanoTime() + within.toNanos();
        for (;;) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            CmEvent e = channel.awaitEvent(Duration.ofNanos(left));
            if (e != null && e.type() == type) {
                return true;
            }
        }
    }

    /** Disconnects, ignoring an id that the server's teardown already disconnected. */
    void disconnect() {
        try {
            id.disconnect();
        } catch (RuntimeException e) {
            // already disconnected by the server
        }
    }

    @Override
    public void close() {
        try {
            if (id != null) {
                id.close(); // with it the QP, CQ, PD and region made through its context
            }
        } finally {
            channel.close();
            arena.close();
        }
    }
}
