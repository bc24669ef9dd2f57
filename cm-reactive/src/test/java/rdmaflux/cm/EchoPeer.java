package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertTrue;

import rdmaflux.testing.RemoteProcess;
import rdmaflux.testing.SandboxHosts;

/**
 * The echo peer on host 2 ({@link HostsPeerMain}'s {@code echo}) that the tests of one class share when they
 * need only a live echo server or UD echo: under emulation a peer JVM's start costs more than most of those
 * tests, so one JVM serves them all. Each test opens its own connections; the class closes the peer after its
 * last test.
 */
final class EchoPeer implements AutoCloseable {
    private RemoteProcess process;

    /** {@return the peer, started on first use; fails if it exited} */
    RemoteProcess get() {
        if (process == null) {
            process = SandboxHosts.startJava(2, HostsPeerMain.class, "echo");
        }
        RemoteProcess p = process;
        assertTrue(p.exitCode().isEmpty(), () -> "the shared echo peer on host 2 exited: " + p.stderr());
        return p;
    }

    @Override
    public void close() {
        if (process != null) {
            process.close();
            process = null;
        }
    }
}
