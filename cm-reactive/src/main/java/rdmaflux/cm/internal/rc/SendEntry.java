package rdmaflux.cm.internal.rc;

import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.RegisteredBuffer;
import rdmaflux.cm.internal.memory.Registration;
import rdmaflux.cm.internal.memory.SendBuffers;

import java.nio.ByteBuffer;

import reactor.core.publisher.MonoSink;
import rdmaflux.verbs.RemoteBuffer;
import rdmaflux.verbs.SendFlag;
import rdmaflux.verbs.SendOpcode;
import rdmaflux.verbs.SendRequests;

/**
 * One entry of a {@link SendQueue}'s operation table: a posted send-queue work request (its id is
 * {@link #index}) and whom to tell when it completes. Entries are made once per connection and reused.
 *
 * <p>Threads: guarded by the connection's lock ({@link ConnectionLock}).
 */
public final class SendEntry {
    /** The work request id, and where its atomic result word is. */
    final int index;
    OpKind kind;
    MonoSink<Object> sink;
    /** The send buffer it copied into, or -1. */
    int sendSlot = -1;
    int bytes;
    /** When it was written, for its latency; {@link #UNTIMED} when nothing records latencies. */
    long started;
    /** {@link #started} of an operation whose latency nobody records. */
    static final long UNTIMED = Long.MIN_VALUE;
    /**
     * The large message a {@link OpKind#LARGE} or {@link OpKind#LARGE_READ} operation is for; the
     * {@link rdmaflux.verbs.RemoteBuffer} a {@link OpKind#BIND} gave.
     */
    Object large;
    /** The application's registration it uses, leased until it completes or the QP is gone. */
    Registration lease;

    SendEntry(int index) {
        this.index = index;
    }

    /**
     * Writes a {@link OpKind#SEND} at {@code w} of {@code requests}: {@code data} copied into a send buffer,
     * {@code written} writing itself into one (when {@code data} and {@code local} are null), or {@code local}
     * read by the device in place (zero copy; the caller leased it).
     *
     * @param maxInline the queue pair's largest inline payload
     * @param withImmediate whether the SEND carries immediate data (the credits protocol)
     * @param immediate the immediate data: credits owed and large messages finished
     * @return null, or the failure of {@code sink}'s {@link QueueSink.Written#writeTo} (nothing was written at
     *         {@code w}; the send slot it took is in {@code sendSlot})
     */
    RuntimeException writeSend(SendRequests requests, int w, int flags, ByteBuffer data, RegisteredBuffer local,
                               MonoSink<Object> sink, SendBuffers buffers, int maxInline, boolean withImmediate,
                               int immediate) {
        QueueSink.Written written = data == null && local == null ? (QueueSink.Written) sink : null;
        int len = local != null ? (int) local.length() : written == null ? data.remaining() : written.length();
        bytes = len;
        if (local == null) {
            // Before the request is written: a writer that throws leaves nothing at w, and its slot is freed.
            int slot = buffers.take();
            sendSlot = slot;
            if (written == null) {
                buffers.copy(slot, data, len);
            } else {
                ByteBuffer target = buffers.view(slot).limit(len);
                try {
                    written.writeTo(target);
                    if (target.position() != len) {
                        throw QueueSink.Written.wrongLength(target.position(), len);
                    }
                } catch (RuntimeException e) {
                    return e;
                } finally {
                    target.clear(); // copy() puts at absolute indices, up to the limit
                }
            }
        }
        if (len <= maxInline) {
            flags |= SendFlag.INLINE.value();
        }
        requests.set(w, index, withImmediate ? SendOpcode.SEND_WITH_IMM : SendOpcode.SEND, flags);
        if (local != null) {
            if (len > 0) {
                requests.sge(w, 0, local.segment().address(), len, Registration.lkeyOf(local));
            }
        } else if (len > 0) {
            requests.sge(w, 0, buffers.region(), buffers.offset(sendSlot), len);
        }
        if (withImmediate) {
            requests.immediate(w, immediate);
        }
        return null;
    }

    /**
     * Writes the descriptor SEND of a {@link OpKind#LARGE} message at {@code w} of {@code requests}: its address,
     * key and length for the peer to read. The operation completes when the peer finished reading, so it
     * drops its sink.
     *
     * @param maxInline the queue pair's largest inline payload
     * @param immediate the immediate data: {@link Wire#LARGE}, credits owed and large messages finished
     */
    void writeDescriptor(SendRequests requests, int w, int flags, LargeSend message, SendBuffers buffers,
                         int maxInline, int immediate) {
        int slot = buffers.take();
        sendSlot = slot;
        bytes = Wire.DESCRIPTOR;
        sink = null;
        large = message;
        buffers.descriptor(slot, message.address, message.rkey, message.length);
        if (Wire.DESCRIPTOR <= maxInline) {
            flags |= SendFlag.INLINE.value();
        }
        requests.set(w, index, SendOpcode.SEND_WITH_IMM, flags)
                .sge(w, 0, buffers.region(), buffers.offset(slot), Wire.DESCRIPTOR)
                .immediate(w, immediate);
    }

    /**
     * Writes the RDMA READ of the next piece of a large message the peer sent ({@link OpKind#LARGE_READ}) at
     * {@code w} of {@code requests}: at most {@code maxRead} bytes from where the last piece ended.
     */
    void writeReadPiece(SendRequests requests, int w, int flags, LargeReceive message, int maxRead) {
        int at = message.nextRead;
        int n = Math.min(maxRead, message.length - at);
        large = message;
        bytes = n;
        requests.set(w, index, SendOpcode.RDMA_READ, flags).sge(w, 0, message.region, message.regionOffset + at, n)
                .rdma(w, message.remoteAddress + at, message.rkey);
    }

    /**
     * Writes the work request of a one-sided operation ({@link OpKind#READ}, {@link OpKind#WRITE},
     * {@link OpKind#WRITE_IMM}, {@link OpKind#CAS}, {@link OpKind#FAA}, {@link OpKind#BIND}, {@link OpKind#INVALIDATE})
     * at {@code w} of {@code requests}: no send buffer and no credit.
     *
     * @param a the immediate data of a write, the compare (or add) operand of an atomic
     * @param b the swap operand of a compare-and-swap
     * @param subject the {@link WindowGrant} of a bind or invalidate
     * @throws RuntimeException a bind the window refuses (checked before anything is posted)
     */
    void writeOneSided(SendRequests requests, int w, int flags, RegisteredBuffer local, RemoteBuffer remote, long a,
                       long b, Object subject, SendBuffers buffers) {
        switch (kind) {
            case READ -> requests.set(w, index, SendOpcode.RDMA_READ, flags)
                    .sge(w, 0, local.segment().address(), (int) remote.length(), Registration.lkeyOf(local))
                    .rdma(w, remote.address(), remote.rkey());
            case WRITE, WRITE_IMM -> {
                requests.set(w, index, kind == OpKind.WRITE ? SendOpcode.RDMA_WRITE : SendOpcode.RDMA_WRITE_WITH_IMM,
                                flags)
                        .sge(w, 0, local.segment().address(), (int) local.length(), Registration.lkeyOf(local))
                        .rdma(w, remote.address(), remote.rkey());
                if (kind == OpKind.WRITE_IMM) {
                    requests.immediate(w, (int) a);
                }
            }
            case CAS, FAA -> requests.set(w, index, kind == OpKind.CAS ? SendOpcode.ATOMIC_CMP_AND_SWP
                            : SendOpcode.ATOMIC_FETCH_AND_ADD, flags)
                    .sge(w, 0, buffers.atomicRegion(), buffers.atomicOffset(index), 8)
                    .atomic(w, remote.address(), remote.rkey(), a, b);
            case BIND -> {
                WindowGrant g = (WindowGrant) subject;
                requests.set(w, index, SendOpcode.BIND_MW, flags);
                large = requests.bindWindow(w, g.window, g.registration.region(), g.offset, g.length, g.access);
            }
            case INVALIDATE -> requests.set(w, index, SendOpcode.LOCAL_INV, flags)
                    .invalidate(w, ((WindowGrant) subject).rkey());
            default -> throw new IllegalStateException(String.valueOf(kind));
        }
    }

    /**
     * Records the completed operation's latency (and a send's bytes) and gives its sink's result: an
     * atomic's earlier value, a bind's {@link RemoteBuffer}, else {@code null}.
     */
    Object completed(RdmaRecorder recorder, SendBuffers buffers) {
        // Untimed (no recorder): no clock read, which costs about as much as an empty poll on an emulated CPU.
        long latency = started == UNTIMED ? 0 : System.nanoTime() - started;
        switch (kind) {
            case SEND -> {
                recorder.messageSent(bytes);
                recorder.operationLatency("send", latency);
            }
            case CAS, FAA -> {
                recorder.operationLatency(kind == OpKind.CAS ? "cas" : "faa", latency);
                return buffers.atomicResult(index);
            }
            case READ -> recorder.operationLatency("read", latency);
            case WRITE -> recorder.operationLatency("write", latency);
            case WRITE_IMM -> recorder.operationLatency("write_imm", latency);
            case LARGE -> recorder.operationLatency("send_large_descriptor", latency);
            case LARGE_READ -> recorder.operationLatency("read_large", latency);
            case BIND -> {
                recorder.operationLatency("bind_window", latency);
                return large;
            }
            case INVALIDATE -> recorder.operationLatency("invalidate", latency);
            case CONTROL, CLOSE -> { }
        }
        return null;
    }
}
