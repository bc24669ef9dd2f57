package rdmaflux.cm.rsocket;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import rdmaflux.cm.ConnectionOptions;

/**
 * How many received frames of one connection RSocket may hold as zero-copy views of the connection's
 * receive memory; a frame beyond it is copied and its message released at once.
 *
 * <p>Why a bound: RSocket keeps frames its subscribers have not asked for yet (a channel's payloads waiting
 * for the peer's {@code REQUEST_N}, say). A view holds a receive buffer, and so a credit of the peer, or
 * part of the large-message budget. If RSocket held them all, the peer could not send the very
 * {@code REQUEST_N} that lets RSocket let go of them: both sides would wait forever. Half the receive
 * buffers and half the budget stay free for those frames, whatever RSocket keeps.
 *
 * <p>Threads: any; two atomic counters.
 */
final class ZeroCopyQuota {
    private final int maxFrames;
    private final long maxBytes;
    private final AtomicInteger frames = new AtomicInteger();
    private final AtomicLong bytes = new AtomicLong();

    /** @param options the connection's options: its receive buffers and large-message budget */
    ZeroCopyQuota(ConnectionOptions options) {
        this.maxFrames = Math.max(1, options.receiveBuffers() / 2);
        this.maxBytes = options.largeMessageBudget() / 2;
    }

    /**
     * Takes a place for a frame of {@code length} bytes, if one is free.
     *
     * @param length the frame's length
     * @param large whether it came by the rendezvous (it holds budget, not a receive buffer)
     * @return whether the frame may be held as a view; if so, {@link #released} must follow
     */
    boolean tryTake(int length, boolean large) {
        if (frames.incrementAndGet() > maxFrames || large && bytes.addAndGet(length) > maxBytes) {
            frames.decrementAndGet();
            if (large) {
                bytes.addAndGet(-length);
            }
            return false;
        }
        if (!large) {
            bytes.addAndGet(length); // counted alike, so release() need not know which kind it was
        }
        return true;
    }

    /** A view of {@code length} bytes was released. */
    void released(int length) {
        frames.decrementAndGet();
        bytes.addAndGet(-length);
    }
}
