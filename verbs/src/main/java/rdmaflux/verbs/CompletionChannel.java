package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;

import rdmaflux.verbs.ffi.ibv_comp_channel;

/**
 * A completion channel ({@code struct ibv_comp_channel}): its file descriptor becomes readable when a CQ
 * armed with {@link CompletionQueue#requestNotification(boolean)} receives a completion.
 *
 * <p>The descriptor is switched to non-blocking mode at creation, so event loops can poll it together
 * with other descriptors and a close never leaves a thread stuck in {@code read}. {@link #tryGetEvent()}
 * allocates nothing: the out parameters are the channel's, the call is an exact downcall, and errno is
 * captured only when a call failed while the descriptor reports input or an error (a call that finds
 * nothing pending costs one {@code poll(2)} of the descriptor instead).
 */
public final class CompletionChannel extends NativeResource {
    /** Reads without errno capture after a failed one while the descriptor says readable. */
    private static final int PLAIN_RETRIES = 3;

    private final RdmaContext context;
    private final int fd;
    /** The CQs notifying through this channel, by the slot their native context carries; guarded by this. */
    private CompletionQueue[] cqs = new CompletionQueue[4];
    /** Reserved slots: a CQ being created holds its slot before it exists. Guarded by this. */
    private boolean[] taken = new boolean[4];
    /** Where {@code ibv_get_cq_event} writes the CQ and its context: reused, guarded by this. */
    private final MemorySegment eventOut = Arena.ofAuto().allocate(ValueLayout.ADDRESS, 2);
    private final MemorySegment contextOut = eventOut.asSlice(ValueLayout.ADDRESS.byteSize());

    CompletionChannel(RdmaContext context, MemorySegment channel) {
        super(Rank.CHANNEL, channel.reinterpret(ibv_comp_channel.sizeof()), context);
        this.context = context;
        this.fd = ibv_comp_channel.fd(handle);
        Posix.setNonBlocking(fd, true);
    }

    /** {@return a free slot for a CQ about to be created on this channel} */
    synchronized int reserve() {
        for (int i = 0; i < taken.length; i++) {
            if (!taken[i]) {
                taken[i] = true;
                return i;
            }
        }
        int i = taken.length;
        taken = java.util.Arrays.copyOf(taken, i * 2);
        cqs = java.util.Arrays.copyOf(cqs, i * 2);
        taken[i] = true;
        return i;
    }

    /** The CQ made with {@code slot} exists now. */
    synchronized void fill(int slot, CompletionQueue cq) {
        cqs[slot] = cq;
    }

    /** The CQ of {@code slot} was destroyed (or never made). */
    synchronized void free(int slot) {
        cqs[slot] = null;
        taken[slot] = false;
    }

    /** {@return the device context} */
    public RdmaContext context() {
        return context;
    }

    /** {@return the file descriptor to poll for readability} */
    public int fd() {
        checkOpen();
        return fd;
    }

    /**
     * Takes one pending notification without waiting, and acknowledges it.
     *
     * @return the CQ that has new completions (it is disarmed now: poll it, then re-arm), or {@code null}
     *         when no notification is pending
     */
    public CompletionQueue tryGetEvent() {
        MemorySegment ch = acquire();
        try {
            synchronized (this) {
                int rc = Calls.getCqEvent(ch, eventOut, contextOut);
                // Nothing pending (EAGAIN, the usual end of a wake-up) or an error. The descriptor tells
                // which without errno: it reports neither input nor an error when empty. Readable after
                // a failed read is mostly an event that arrived in between: read again the same way.
                // The call with errno capture is for an error that stays: on this rare path it would
                // run uncompiled, and there the capture segment's slice is a heap object per call.
                for (int retry = 0; rc != 0 && retry < PLAIN_RETRIES; retry++) {
                    if (!Posix.pollIn(fd, 0)) {
                        return null;
                    }
                    rc = Calls.getCqEvent(ch, eventOut, contextOut);
                }
                if (rc != 0) {
                    if (!Posix.pollIn(fd, 0)) {
                        return null;
                    }
                    if (!Calls.getCqEventChecked(ch, eventOut, contextOut)) {
                        return null;
                    }
                }
                // Read as plain addresses: a pointer read as a segment would be a new object per event.
                long cq = eventOut.get(ValueLayout.JAVA_LONG, 0);
                long slot = contextOut.get(ValueLayout.JAVA_LONG, 0) - 1;
                CompletionQueue q = slot >= 0 && slot < cqs.length ? cqs[(int) slot] : null;
                if (q == null || q.handle.address() != cq) {
                    // Acked all the same: an unacknowledged event makes ibv_destroy_cq wait forever.
                    Calls.Plain.ackCqEvents(MemorySegment.ofAddress(cq), 1);
                    throw new IllegalStateException("event for a CQ unknown to " + this);
                }
                // Acked at once, for the same reason.
                Calls.Plain.ackCqEvents(q.handle, 1);
                return q;
            }
        } finally {
            release();
        }
    }

    /**
     * Waits for a notification.
     *
     * @param timeout the longest wait
     * @return the notified CQ, or {@code null} on timeout
     */
    public CompletionQueue awaitEvent(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (;;) {
            CompletionQueue q = tryGetEvent();
            if (q != null) {
                return q;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            Posix.pollIn(fd, (int) Math.max(1, Math.min(Integer.MAX_VALUE, left / 1_000_000)));
        }
    }

    @Override
    void destroy() {
        Calls.IBV_DESTROY_COMP_CHANNEL.callStatus(handle);
    }

    @Override
    public String toString() {
        return "CompletionChannel[" + context.deviceName() + ", fd=" + fd + "]";
    }
}
