package rdmaflux.cm.rsocket;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledDirectByteBuf;
import rdmaflux.cm.RdmaMessage;

/**
 * A received message as a {@code ByteBuf} over its own memory, without a copy. The
 * last {@code release()} of the buffer (and of every retained slice of it) releases the message.
 *
 * <p>Threads: any; the reference count is Netty's, and {@link RdmaMessage#release()} is thread-safe.
 */
final class MessageByteBuf extends UnpooledDirectByteBuf {
    private final RdmaMessage message;
    private final ZeroCopyQuota quota;

    /**
     * @param alloc the allocator the connection reports
     * @param message a received message; this buffer owns its release
     * @param quota told when the message is released
     */
    MessageByteBuf(ByteBufAllocator alloc, RdmaMessage message, ZeroCopyQuota quota) {
        // Netty refuses a read-only ByteBuffer here; nothing writes through this one.
        super(alloc, message.data().asByteBuffer(), message.length());
        this.message = message;
        this.quota = quota;
    }

    @Override
    protected void deallocate() {
        super.deallocate();
        int length = message.length();
        message.release();
        quota.released(length);
    }
}
