package rdmaflux.cm.internal.rc;

import rdmaflux.cm.RegisteredBuffer;
import rdmaflux.cm.internal.memory.Registration;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

import reactor.core.publisher.MonoSink;

/**
 * One large message on its way out ({@link Rendezvous}): the registered copy the peer reads, and the
 * send's sink, which completes when the peer says it finished reading.
 *
 * <p>Threads: guarded by the owning {@link RcQueue}'s lock, except that a worker fills in
 * {@link #arena} and {@link #region} before it hands the message back under that lock.
 */
public final class LargeSend {
    static final int NEW = 0;
    static final int PREPARING = 1;
    static final int READY = 2;
    static final int POSTED = 3;
    static final int DONE = 4;

    /** The caller's bytes; read once, by the worker that copies them, and never after a cancel. */
    final ByteBuffer source;
    /** Or the caller's registered memory, sent in place; leased until the peer read it. */
    final RegisteredBuffer local;
    final int length;
    final MonoSink<Object> sink;
    /** Whether its bytes count against the large-message budget (memory registered for it). */
    boolean budgeted;
    /** What the descriptor announces: where the peer reads, with which key. */
    long address;
    int rkey;
    int state = NEW;
    /** The subscriber cancelled while the message was queued: nothing is sent. */
    boolean abandoned;
    /** The copy's arena; {@code null} when the peer reads the caller's own off-heap memory. */
    Arena arena;
    /** What the peer reads: the copy, or the caller's off-heap memory. */
    MemorySegment copy;
    /** The registration the peer reads, from the protection domain's cache; closed when the message is done. */
    Registration.Lease region;

    LargeSend(ByteBuffer source, MonoSink<Object> sink) {
        // A view fixed now: the descriptor announces this length, whatever the caller does to the
        // buffer's position and limit before the worker registers or copies it.
        this.source = source.slice();
        this.local = null;
        this.length = this.source.remaining();
        this.sink = sink;
    }

    LargeSend(RegisteredBuffer local, MonoSink<Object> sink) {
        this.source = null;
        this.local = local;
        this.length = (int) local.length();
        this.sink = sink;
    }

    /** Frees the copy and returns the lease (idempotent). The caller makes sure the device no longer reads it. */
    void free() {
        if (state == DONE && region == null && arena == null) {
            return;
        }
        if (local != null && state != DONE) {
            Registration.of(local).release();
        }
        state = DONE;
        if (region != null) {
            region.close();
            region = null;
        }
        if (arena != null) {
            arena.close();
            arena = null;
        }
    }
}
