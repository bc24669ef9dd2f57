package rdmaflux.testing;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;

import rdmaflux.verbs.Rdma;
import rdmaflux.verbs.RdmaDevice;

/**
 * Where integration tests find RDMA: the sandbox exports RDMAFLUX_SANDBOX_DEVICE and RDMAFLUX_SANDBOX_ADDR;
 * on a host with its own devices set RDMAFLUX_TEST_DEVICE / RDMAFLUX_TEST_ADDR (an IP address of an
 * RDMA-capable interface). Missing RDMA makes a test fail, never skip: a skipped RDMA test proves nothing.
 */
public final class RdmaTestEnv {
    private RdmaTestEnv() {
    }

    /**
     * Fails the test unless RDMA is usable.
     *
     * @return the device name to use
     */
    public static String device() {
        Rdma.ensureAvailable();
        String name = env("RDMAFLUX_TEST_DEVICE", env("RDMAFLUX_SANDBOX_DEVICE", null));
        if (name != null) {
            return name;
        }
        List<RdmaDevice> devices = Rdma.devices();
        if (devices.isEmpty()) {
            throw new AssertionError("no RDMA device (Rdma.isAvailable() said yes, so this is a bug)");
        }
        return devices.getFirst().name();
    }

    /** @return the IP address of the RDMA interface that tests bind and connect to */
    public static InetAddress address() {
        String a = env("RDMAFLUX_TEST_ADDR", env("RDMAFLUX_SANDBOX_ADDR", null));
        if (a == null) {
            throw new AssertionError("set RDMAFLUX_TEST_ADDR to the IP address of an RDMA-capable interface "
                    + "(the sandbox sets RDMAFLUX_SANDBOX_ADDR)");
        }
        try {
            return InetAddress.getByName(a);
        } catch (UnknownHostException e) {
            throw new AssertionError("bad RDMA test address " + a, e);
        }
    }

    /** @return whether the tests run in the project's Soft-RoCE VM */
    public static boolean inSandbox() {
        return System.getenv("RDMAFLUX_SANDBOX_DEVICE") != null;
    }

    /**
     * How many times the reference time this machine takes (scripts/lib/it-lane's calibration of the lane,
     * in {@code RDMAFLUX_IT_SPEED}), never less than 1: 1 outside a lane.
     *
     * @return the lane's speed factor
     */
    public static double speedFactor() {
        String v = env("RDMAFLUX_IT_SPEED", "1");
        try {
            return Math.max(1.0, Double.parseDouble(v));
        } catch (NumberFormatException e) {
            throw new AssertionError("RDMAFLUX_IT_SPEED is not a number: " + v, e);
        }
    }

    /**
     * A bound on work the emulated CPU does, stretched by {@link #speedFactor()}: a bound sized for the
     * reference machine would fail a correct run on a machine that is only slower.
     *
     * @param atReferenceSpeed the bound on the reference machine
     * @return the bound on this one
     */
    public static java.time.Duration scaled(java.time.Duration atReferenceSpeed) {
        return java.time.Duration.ofMillis(Math.round(atReferenceSpeed.toMillis() * speedFactor()));
    }

    private static String env(String name, String fallback) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? fallback : v;
    }
}
