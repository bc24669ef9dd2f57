package rdmaflux.cm.internal.rc;

/**
 * The control messages of the credits protocol (docs/protocol.md): a zero-length {@code SEND_WITH_IMM}
 * whose immediate data ({@link Wire}) returns credits ({@link CreditWindow}), reports finished large
 * messages ({@link Rendezvous}), or says the sender closes in order. It needs no credit: its receive
 * buffers are posted beyond the window ({@link CreditWindow#controlDue}). When one is sent and what its
 * completion means is decided here; the send-queue entry it takes is the {@link SendQueue}'s.
 *
 * <p>Threads: under the connection's {@link ConnectionLock}, except {@link #probe()} (the completion loop,
 * which never waits for the lock) and {@link #sendClose()} (the CM loop, which takes it).
 */
final class ControlMessages {
    private final ConnectionLock lock;
    private final SendQueue sends;
    private final CreditWindow window;
    private final Rendezvous rendezvous;
    private final QueueOwner owner;
    private final boolean credits;

    ControlMessages(ConnectionLock lock, SendQueue sends, CreditWindow window, Rendezvous rendezvous,
                    QueueOwner owner, boolean credits) {
        this.lock = lock;
        this.sends = sends;
        this.window = window;
        this.rendezvous = rendezvous;
        this.owner = owner;
        this.credits = credits;
    }

    /**
     * Completion loop: the keepalive probe, unless a control message is on its way. Skipped when another
     * thread holds the lock: the loop never waits for it, and a connection in use needs no probe (the next
     * tick probes again if it is idle by then).
     */
    void probe() {
        if (!lock.tryLock()) {
            return;
        }
        try {
            if (!sends.closedForSends() && !window.controlInFlight()) {
                post(OpKind.CONTROL);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Guarded by the lock. Returns credits with a control message when no data send will carry them soon. */
    void maybeReturnCredits() {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        if (credits && !sends.closedForSends() && (window.controlDue(sends.requestsWaiting())
                || (rendezvous.finishedOwed() > 0 && !window.controlInFlight()))) {
            post(OpKind.CONTROL);
        }
    }

    /**
     * CM loop: starts the orderly close: refuses new sends and, with the credits protocol, posts the
     * CLOSE message, whose completion lets the connection disconnect, so the peer reads it before the DREQ.
     *
     * @return whether the close message was posted
     */
    boolean sendClose() {
        sends.closeForSends();
        if (!credits) {
            return false;
        }
        lock.lock();
        try {
            return post(OpKind.CLOSE);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Guarded by the lock: a send-queue entry of {@code kind} completed; a control message's completion
     * frees the window for the next one, the close message's lets the connection disconnect.
     *
     * @param kind the completed entry's operation
     */
    void completed(OpKind kind) {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        if (kind == OpKind.CONTROL) {
            window.controlCompleted();
        } else if (kind == OpKind.CLOSE) {
            owner.closeSent();
        }
    }

    /**
     * Guarded by the lock. Posted with the batch; the close message at once, so the caller knows whether it
     * left.
     */
    private boolean post(OpKind kind) {
        assert lock.isHeldByCurrentThread() : "guarded by the connection's lock";
        SendEntry op = sends.freeEntry();
        if (op == null) {
            return false;
        }
        int finished = rendezvous.finishedField();
        int imm = Wire.CONTROL | (kind == OpKind.CLOSE ? Wire.CLOSE : 0) | finished | window.owed();
        boolean full = sends.writeControl(op, kind, imm);
        rendezvous.finishedSent(finished);
        if (kind == OpKind.CONTROL) {
            window.controlSent();
        } else {
            window.takeOwed();
        }
        if (kind == OpKind.CLOSE || full) {
            sends.flushNow();
            return op.kind == kind; // a request the device refused was finished (and its kind cleared)
        }
        return true;
    }
}
