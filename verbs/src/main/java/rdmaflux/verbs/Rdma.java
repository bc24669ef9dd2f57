package rdmaflux.verbs;

import java.util.List;

/**
 * Entry point: whether RDMA works here, and the devices.
 *
 * <p>Availability is diagnosed once, on first use, in the style of netty's {@code IOUring}:
 * {@link #isAvailable()} to branch, {@link #ensureAvailable()} to fail fast with a message that says how
 * to fix the machine, {@link #unavailabilityCause()} to log it.
 */
public final class Rdma {
    private Rdma() {
    }

    private static final class Holder {
        static final RdmaUnavailableException CAUSE = diagnoseSafely();

        private static RdmaUnavailableException diagnoseSafely() {
            try {
                return Availability.diagnose(Availability.host(() -> RdmaDevice.list().size()));
            } catch (RuntimeException | LinkageError e) {
                RdmaUnavailableException u = new RdmaUnavailableException(
                        RdmaUnavailableException.Reason.LIBRARY_MISSING,
                        "rdma-core could not be initialised: " + e);
                u.initCause(e);
                return u;
            }
        }
    }

    /** {@return whether rdma-core is installed and at least one usable RDMA device exists} */
    public static boolean isAvailable() {
        return Holder.CAUSE == null;
    }

    /**
     * Fails unless RDMA is usable.
     *
     * @throws RdmaUnavailableException with the diagnosed reason and its remedy
     */
    public static void ensureAvailable() {
        if (Holder.CAUSE != null) {
            throw Holder.CAUSE;
        }
    }

    /** {@return why RDMA is unavailable, or {@code null} when it is available} */
    public static RdmaUnavailableException unavailabilityCause() {
        return Holder.CAUSE;
    }

    /**
     * Lists the RDMA devices libibverbs sees.
     *
     * @return the devices, empty when there are none
     * @throws RdmaUnavailableException when rdma-core is not installed
     */
    public static List<RdmaDevice> devices() {
        if (Holder.CAUSE != null && Holder.CAUSE.reason() == RdmaUnavailableException.Reason.LIBRARY_MISSING) {
            throw Holder.CAUSE;
        }
        return RdmaDevice.list();
    }

    /**
     * Whether registered memory is safe in a process that forks ({@code ibv_is_fork_initialized()}):
     * {@link ForkStatus#UNNEEDED} when the kernel copies pinned pages for the child at fork time, which makes
     * {@code ProcessBuilder}'s launch mechanisms, {@code fork()} included, safe while data moves.
     *
     * @return the status libibverbs reports
     * @throws RdmaUnavailableException when rdma-core is not installed
     */
    public static ForkStatus forkStatus() {
        if (Holder.CAUSE != null && Holder.CAUSE.reason() == RdmaUnavailableException.Reason.LIBRARY_MISSING) {
            throw Holder.CAUSE;
        }
        return ForkStatus.of(Calls.Plain.isForkInitialized());
    }

    /**
     * Opens a device by name.
     *
     * @param name e.g. {@code rxe0} or {@code mlx5_0}
     * @return the open context, owned by the caller
     * @throws RdmaNoDeviceException when there is no such device
     */
    public static RdmaContext open(String name) {
        ensureAvailable();
        return RdmaDevice.openByName(name);
    }
}
