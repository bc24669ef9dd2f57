package rdmaflux.cm.internal.rc;

import rdmaflux.cm.RegisteredBuffer;
import rdmaflux.cm.internal.memory.Registration;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;

import reactor.core.publisher.MonoSink;
import rdmaflux.verbs.RemoteBuffer;

/**
 * What waits on a {@link SendQueue} for a send-queue entry, a send buffer or a credit: requests in the
 * order they came, and the pieces of large messages still to be read, which go first. Requests that wait
 * are posted in order as what they need frees up; a withdrawn or failed one gives back what it holds.
 *
 * <p>Threads: guarded by the connection's {@link ConnectionLock}.
 */
final class WaitingRequests {
    /** Writes one request into the batch if what it needs is free ({@link SendQueue}'s). */
    @FunctionalInterface
    interface Poster {
        /**
         * @return whether it was taken (written, or refused and its sink told so)
         */
        boolean tryPost(OpKind kind, ByteBuffer data, RegisteredBuffer local, RemoteBuffer remote, long a, long b,
                        MonoSink<Object> sink, Object large);
    }

    private final ConnectionLock lock;
    private final Rendezvous rendezvous;
    private final Poster poster;
    private final ArrayDeque<WaitingRequest> pending = new ArrayDeque<>();
    /** Large messages with pieces left to read once an operation is free. */
    private final ArrayDeque<LargeReceive> reads = new ArrayDeque<>();

    WaitingRequests(ConnectionLock lock, Rendezvous rendezvous, Poster poster) {
        this.lock = lock;
        this.rendezvous = rendezvous;
        this.poster = poster;
    }

    /** {@return whether no request waits (large-message reads aside)} */
    boolean isEmpty() {
        return pending.isEmpty();
    }

    /** Queues a request behind those waiting. */
    void add(WaitingRequest request) {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        pending.add(request);
    }

    /** Queues the reads of a large message's pieces, which go before any request. */
    void addRead(LargeReceive message) {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        reads.add(message);
    }

    /**
     * Withdraws {@code request} if it still waits: it gives back what it holds and its sink hears of it if
     * it asked to.
     *
     * @return whether it was waiting
     */
    boolean withdraw(WaitingRequest request) {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        if (!pending.removeIf(q -> q == request)) {
            return false;
        }
        forget(request);
        if (request.sink() instanceof QueueSink.Withdrawable w) {
            w.withdrawn();
        }
        return true;
    }

    /** Posts what waited, large-message reads first, until one cannot be posted. */
    void drain() {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        LargeReceive r;
        while ((r = reads.peek()) != null) {
            while (r.nextRead < r.length) {
                if (!poster.tryPost(OpKind.LARGE_READ, null, null, null, 0, 0, null, r)) {
                    return; // no operation free: the reads go first when one is
                }
            }
            reads.poll();
        }
        WaitingRequest p;
        while ((p = pending.peek()) != null
                && poster.tryPost(p.kind(), p.data(), p.local(), p.remote(), p.a(), p.b(), p.sink(), p.large())) {
            pending.poll();
        }
    }

    /** Every waiting request fails with {@code cause}, giving back what it holds. */
    void failAll(Throwable cause) {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        WaitingRequest p;
        while ((p = pending.poll()) != null) {
            forget(p);
            if (p.sink() != null) {
                p.sink().error(cause);
            }
        }
    }

    /** A request that will never be posted gives back what it holds. */
    private void forget(WaitingRequest p) {
        if (p.large() instanceof LargeSend ls) {
            rendezvous.cancelled(ls); // returns its lease too
        } else if (p.local() != null) {
            Registration.of(p.local()).release();
        } else if (p.kind() == OpKind.BIND) {
            ((WindowGrant) p.large()).end(); // never bound
        }
    }
}
