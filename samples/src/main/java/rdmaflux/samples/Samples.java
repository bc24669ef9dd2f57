package rdmaflux.samples;

import rdmaflux.verbs.Rdma;

/** What every sample checks before it starts. */
public final class Samples {
    /** The exit code of a sample that cannot run here. */
    public static final int CANNOT_RUN = 2;

    private Samples() {
    }

    /**
     * Explains on stderr why the sample cannot run: RDMA unavailable (with the remedy), or no address
     * (outside the sandbox, which provides $RDMAFLUX_SANDBOX_ADDR).
     *
     * @param address the RDMA interface address the user gave, or the sandbox default
     * @return true when the sample can run
     */
    public static boolean ready(String address) {
        if (!Rdma.isAvailable()) {
            System.err.println("RDMA is not available: " + Rdma.unavailabilityCause().getMessage());
            return false;
        }
        if (address == null || address.isEmpty()) {
            System.err.println("--address is required outside the sandbox");
            return false;
        }
        return true;
    }
}
