package rdmaflux.cm.internal.rc;

import rdmaflux.cm.RegisteredBuffer;

import java.nio.ByteBuffer;

import reactor.core.publisher.MonoSink;
import rdmaflux.verbs.RemoteBuffer;

/**
 * A request of a {@link SendQueue} waiting for a send buffer, a send-queue entry or a credit: its fields,
 * which {@link SendQueue#drainPending()} posts once they are free.
 *
 * <p>Threads: queued and taken under the connection's lock ({@link ConnectionLock}).
 */
public interface WaitingRequest {
    /** {@return the operation} */
    OpKind kind();

    /** {@return the bytes to copy, or null} */
    ByteBuffer data();

    /** {@return the registered memory it uses, or null} */
    RegisteredBuffer local();

    /** {@return the remote memory it uses, or null} */
    RemoteBuffer remote();

    /** {@return the first operand (see {@link SendEntry#writeOneSided})} */
    long a();

    /** {@return the second operand} */
    long b();

    /** {@return whom to tell} */
    MonoSink<Object> sink();

    /** {@return the large message or grant it is for, or null} */
    Object large();

    /**
     * A request that could not be posted at once. Only those are queued, so the common case allocates none;
     * a {@link QueueSink.Message} waits as itself.
     */
    record Pending(SendQueue queue, OpKind kind, ByteBuffer data, RegisteredBuffer local, RemoteBuffer remote,
                   long a, long b, MonoSink<Object> sink, Object large)
            implements WaitingRequest, reactor.core.Disposable {
        /** Withdraws this request if it is still queued: its own {@code Disposable}, not one more object. */
        @Override
        public void dispose() {
            queue.withdraw(this);
        }
    }
}
