package rdmaflux.cm.internal.rc;

import rdmaflux.cm.RegisteredBuffer;

import reactor.core.publisher.MonoSink;

/**
 * A sink made for a {@link SendQueue} rather than by {@code Mono.create}: the queue never registers demand
 * or disposal callbacks, only {@link MonoSink#onCancel} to withdraw a queued request. Told on the thread
 * that completes the request, under the connection's lock: it must only record and hand over.
 */
public interface QueueSink extends MonoSink<Object> {
    @Override
    default MonoSink<Object> onRequest(java.util.function.LongConsumer consumer) {
        return this;
    }

    @Override
    default MonoSink<Object> onDispose(reactor.core.Disposable d) {
        return this;
    }

    /**
     * The sink of a message whose bytes are copied into a send buffer ({@link OpKind#SEND}) that, when
     * it must wait for a send buffer, an entry or a credit, waits as itself: its owner reuses it, so a
     * message that waits allocates nothing. It withdraws itself through {@link SendQueue#withdraw}.
     */
    interface Message extends QueueSink, WaitingRequest {
        /**
         * Under the queue's lock: it waits in {@code queue} until it is posted, refused or withdrawn.
         *
         * @param queue where to withdraw it
         */
        void waiting(SendQueue queue);

        @Override
        default OpKind kind() {
            return OpKind.SEND;
        }

        @Override
        default RegisteredBuffer local() {
            return null;
        }

        @Override
        default rdmaflux.verbs.RemoteBuffer remote() {
            return null;
        }

        @Override
        default long a() {
            return 0;
        }

        @Override
        default long b() {
            return 0;
        }

        @Override
        default MonoSink<Object> sink() {
            return this;
        }

        @Override
        default Object large() {
            return null;
        }
    }

    /**
     * A {@link Message} without a buffer of bytes ({@code data()} is null): it writes them into its send buffer
     * when posted, under the queue's lock.
     */
    interface Written extends Message {
        /** {@return the message's length: at most the eager message size} */
        int length();

        /**
         * Under the queue's lock: writes exactly {@link #length()} bytes into {@code target} (position 0, limit
         * the length), or throws, and the message fails.
         *
         * @param target the send buffer, valid only during the call
         */
        void writeTo(java.nio.ByteBuffer target);

        /** {@return the failure of a writer that wrote {@code wrote} of its {@code length} bytes} */
        static IllegalStateException wrongLength(int wrote, int length) {
            return new IllegalStateException("a MessageWriter wrote " + wrote + " of the " + length + " bytes its "
                    + "length() gave: write exactly length() bytes, with relative puts");
        }
    }

    /**
     * A sink that wants to know when its request was withdrawn (a cancelled {@code Mono}'s sink is not told:
     * nobody listens any more). Told under the connection's lock: it must only record and hand over.
     */
    interface Withdrawable {
        /** The request was taken off the queue before it was posted: no completion will come. */
        void withdrawn();
    }
}
