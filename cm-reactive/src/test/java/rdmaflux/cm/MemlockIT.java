package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.test.StepVerifier;
import rdmaflux.testing.ChildProcess;
import rdmaflux.testing.RdmaTestEnv;

/**
 * The locked-memory limit (issue #43): a process whose {@code RLIMIT_MEMLOCK} is too small for a registration
 * gets {@link rdmaflux.verbs.RdmaMemlockException}, naming the limit and the fix, from whatever needed the
 * registration (a register, a large send, a connect, a large message received), and only that fails.
 *
 * <p>The tests run as root, whose CAP_IPC_LOCK lifts the limit, so the client is a child JVM
 * ({@link MemlockPeerMain}) started through util-linux's {@code prlimit} (soft 32 MiB, hard 64 MiB) and
 * {@code setpriv}, which drops CAP_IPC_LOCK from its bounding, inheritable and ambient sets: root's
 * {@code execve} then gives java every capability but that one. The echo server stays in this JVM.
 */
class MemlockIT {
    /** The child's JVM start and its five connection setups under emulation. */
    private static final Duration T = RdmaTestEnv.scaled(Duration.ofMinutes(5));
    private static final long SOFT = 32L << 20;
    private static final long HARD = 64L << 20;
    private static final int CAP_IPC_LOCK = 14;

    @Test
    void registrationsPastTheLimitFailTypedNamingTheFixAndOtherConnectionsKeepWorking(@TempDir Path dir)
            throws Exception {
        Map<String, Integer> baseline = Resources.baseline();
        try (EchoServer echo = new EchoServer(PeerMain.OPTIONS)) {
            InetSocketAddress at = echo.address();
            List<String> cmd = new ArrayList<>(List.of("prlimit", "--memlock=" + SOFT + ":" + HARD,
                    "setpriv", "--inh-caps=-ipc_lock", "--ambient-caps=-ipc_lock", "--bounding-set=-ipc_lock", "--"));
            cmd.addAll(PeerProcess.javaCommand(MemlockPeerMain.class, List.of(), at.getAddress().getHostAddress(),
                    Integer.toString(at.getPort())));
            try (ChildProcess child = ChildProcess.start(dir, cmd.toArray(String[]::new))) {
                int exit = child.awaitExit(T);
                String out = child.stdout();
                assertEquals(0, exit, child.describe());
                assertTrue(out.contains("\nDONE"), child.describe());
                Map<String, String> status = lines(out, "STATUS ");
                long capEff = Long.parseUnsignedLong(status.get("CapEff:"), 16);
                assertEquals(0, capEff & (1L << CAP_IPC_LOCK), "the child kept CAP_IPC_LOCK: " + child.describe());

                Map<String, String> steps = lines(out, "STEP ");
                assertEquals("ok", steps.get("before"), child.describe());
                for (String step : List.of("register", "send", "connect", "receive")) {
                    String outcome = steps.get(step);
                    assertNotNull(outcome, "step " + step + " did not run: " + child.describe());
                    assertTrue(outcome.startsWith("error rdmaflux.verbs.RdmaMemlockException "),
                            "step " + step + ": " + outcome);
                    for (String part : List.of("ibv_reg_mr failed: ENOMEM", "RLIMIT_MEMLOCK",
                            "soft 32 MiB (" + SOFT + " bytes)", "hard 64 MiB (" + HARD + " bytes)", "CAP_IPC_LOCK",
                            "ulimit -l", "LimitMEMLOCK=", "--ulimit memlock", "--cap-add IPC_LOCK")) {
                        assertTrue(outcome.contains(part), "step " + step + " lacks '" + part + "': " + outcome);
                    }
                }
                // Connection A echoed, byte for byte, after every refused registration.
                assertEquals("ok", steps.get("after"), child.describe());
            }
            // The server's side, in a process the limit does not bind, served through it all and still does.
            RdmaConnection c = RdmaConnection.connect(at, PeerMain.OPTIONS).block(T);
            StepVerifier.create(c.receiveBytes().take(1))
                    .then(() -> c.send(Payloads.message(7, 1024)).subscribe())
                    .assertNext(data -> Payloads.verify(data, 7, 1024))
                    .expectComplete()
                    .verify(T);
            c.disposeNow(T);
        }
        Resources.awaitBaseline(baseline, T, "after the limited client's connections");
    }

    /** {@return for each output line starting with {@code prefix}: its next word, and the rest after a space} */
    private static Map<String, String> lines(String out, String prefix) {
        Map<String, String> m = new HashMap<>();
        for (String line : out.split("\n")) {
            if (line.startsWith(prefix)) {
                String rest = line.substring(prefix.length()).trim();
                int sp = rest.indexOf(' ');
                m.put(sp < 0 ? rest : rest.substring(0, sp), sp < 0 ? "" : rest.substring(sp + 1).trim());
            }
        }
        return m;
    }
}
