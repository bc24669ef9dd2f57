package rdmaflux.cm.internal.rc;

import rdmaflux.cm.RdmaMessage;
import rdmaflux.cm.internal.memory.Registrations;

import rdmaflux.verbs.ProtectionDomain;

/**
 * An RC connection as its {@link Rendezvous} (large messages) sees it: its domain, its lock, the reads it
 * posts, its inbound sink and its receive slots.
 *
 * <p>Threads: as {@link Rendezvous.Port} says per method. The parts are set once in the queue's
 * constructor ({@link #bind}), before the connection is handed to any other thread.
 */
public final class RcPort implements Rendezvous.Port {
    private final QueueOwner owner;
    private final Registrations registrations;
    private final ConnectionLock lock;
    private final reactor.core.scheduler.Scheduler worker;
    private SendQueue sends;
    private Receives receives;
    private Inbound inbound;

    RcPort(QueueOwner owner, Registrations registrations, ConnectionLock lock,
           reactor.core.scheduler.Scheduler worker) {
        this.owner = owner;
        this.registrations = registrations;
        this.lock = lock;
        this.worker = worker;
    }

    /** Once, in the queue's constructor: the parts made after the {@link Rendezvous}. */
    void bind(SendQueue sendQueue, Receives receiveSide, Inbound inboundSide) {
        this.sends = sendQueue;
        this.receives = receiveSide;
        this.inbound = inboundSide;
    }

    @Override
    public reactor.core.scheduler.Scheduler worker() {
        return worker;
    }

    @Override
    public ProtectionDomain pd() {
        return registrations.pd();
    }

    @Override
    public Registrations registrations() {
        return registrations;
    }

    @Override
    public ConnectionLock lock() {
        return lock;
    }

    @Override
    public void postRead(LargeReceive message) {
        sends.postRead(message);
    }

    @Override
    public void resume() {
        lock.lock();
        try {
            sends.drainPending();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void emit(RdmaMessage message, int len) {
        inbound.emit(message, len);
    }

    @Override
    public void fail(Throwable cause) {
        owner.transferFailed(cause);
    }

    @Override
    public void releaseSlot(ReceiveSlot slot) {
        if (slot.take(slot.generation())) {
            receives.released(slot);
        }
    }
}
