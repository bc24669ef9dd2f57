package rdmaflux.cm.internal.rc;

import java.util.concurrent.atomic.AtomicReference;

/**
 * The slots the application released and nobody reposted yet: a stack linked through
 * {@link ReceiveSlot#nextReleased}, pushed without waiting by releasing threads and emptied at once by the
 * holder of the connection's lock, which reposts them.
 *
 * <p>Threads: {@link #push} from any thread; {@link #takeAll} by the lock's holder.
 */
public final class ReleasedSlots {
    private final AtomicReference<ReceiveSlot> head = new AtomicReference<>();

    /** Any thread: {@code slot} waits to be reposted. */
    void push(ReceiveSlot slot) {
        ReceiveSlot h;
        do {
            h = head.get();
            slot.nextReleased = h;
        } while (!head.compareAndSet(h, slot));
    }

    /** {@return whether a slot waits} */
    boolean any() {
        return head.get() != null;
    }

    /** {@return every waiting slot, newest first, linked through {@link ReceiveSlot#nextReleased}; or null} */
    ReceiveSlot takeAll() {
        return head.get() == null ? null : head.getAndSet(null);
    }
}
