package rdmaflux.cm.internal.cq;

/**
 * Who holds one device's resources, and whether the device was removed: decides, exactly once, when a removed
 * device's resources may close (its last holder gone, or none when the removal was heard of). Pure, so that its
 * every order of holds, releases and the removal can be tested without a device.
 *
 * <p>Threads: not thread-safe; its owner ({@link DeviceResources}) guards it with its own lock.
 */
final class DeviceHolders {
    private int holders;
    private boolean removed;
    private boolean released;

    /** {@return whether the holder may use the resources: false once the device was removed} */
    boolean hold() {
        if (removed) {
            return false;
        }
        holders++;
        return true;
    }

    /**
     * A holder let go (its id destroyed, its regions closed).
     *
     * @return whether the resources close now: the device was removed and this was its last holder
     * @throws IllegalStateException when nothing is held
     */
    boolean release() {
        if (holders == 0) {
            throw new IllegalStateException("a device's resources released more often than held");
        }
        holders--;
        return closeNow();
    }

    /** The device was removed; {@return whether the resources close now: nothing holds them} */
    boolean remove() {
        removed = true;
        return closeNow();
    }

    /** {@return whether the device was removed} */
    boolean removed() {
        return removed;
    }

    /** {@return the holders now} */
    int holders() {
        return holders;
    }

    private boolean closeNow() {
        if (removed && holders == 0 && !released) {
            released = true;
            return true;
        }
        return false;
    }
}
