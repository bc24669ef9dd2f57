package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import rdmaflux.testing.ChildProcess;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.ForkStatus;
import rdmaflux.verbs.Rdma;

/**
 * fork/exec while data moves (issue #43; docs/reliability.md, "Child processes"): 40 children started
 * with {@link ProcessBuilder} while large messages and RDMA writes use registered memory
 * ({@link ForkExecScenario}) corrupt nothing, and every child exits 0. Once with the JDK's default launch
 * mechanism (posix_spawn through jspawnhelper: the JVM's pages are never shared copy-on-write), once in a
 * JVM that launches with a real fork(), whose copy-on-write pages are what fork safety is about.
 */
class ForkExecIT {
    /**
     * At the reference speed a child takes up to a second to start by posix_spawn (jspawnhelper's exec, then the
     * command's) and up to two by fork (the JVM's page tables copied, its pinned pages too); a 4 MiB message about
     * half a second. 25 children by posix_spawn and 15 by fork, each run going on until 8 (4) large messages and
     * 20 writes completed beside them, keep the class within a minute (the fork run adds a JVM's start).
     */
    private static final Duration T = RdmaTestEnv.scaled(Duration.ofMinutes(4));
    private static final String LAUNCH = "jdk.lang.Process.launchMechanism";

    /**
     * What docs/reliability.md rests on: the kernel copies pinned pages for a forked child (Linux 5.13 on says
     * so through the RDMA netlink attribute that {@code rdma system show} prints as {@code copy-on-fork}), and
     * libibverbs reads that as fork support being unneeded.
     */
    @Test
    void theKernelCopiesPinnedPagesOnFork() throws Exception {
        Process p = new ProcessBuilder("rdma", "system", "show").redirectErrorStream(true).start();
        String show = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0, "rdma system show: " + show);
        assertTrue(show.contains("copy-on-fork on"), "rdma system show: " + show);
        assertEquals(ForkStatus.UNNEEDED, Rdma.forkStatus());
    }

    @Test
    void childrenStartedByPosixSpawnWhileMessagesAndWritesMoveCorruptNothing() throws Exception {
        assertNull(System.getProperty(LAUNCH), "this test is about the JDK's default launch mechanism");
        Map<String, Integer> baseline = Resources.baseline();
        ForkExecScenario.Result r = ForkExecScenario.run(25, 8, 20, T);
        System.out.println("posix_spawn: " + r);
        assertTrue(r.children() >= 25 && r.messages() >= 8 && r.writes() >= 20, r.toString());
        Resources.awaitBaseline(baseline, T, "after the fork/exec scenario");
    }

    @Test
    void childrenStartedByForkWhileMessagesAndWritesMoveCorruptNothing(@TempDir Path dir) throws Exception {
        List<String> cmd = PeerProcess.javaCommand(ForkExecScenario.class, List.of("-D" + LAUNCH + "=FORK"),
                "15", "4", "20", Long.toString(T.toSeconds()));
        try (ChildProcess child = ChildProcess.start(dir, cmd.toArray(String[]::new))) {
            int exit = child.awaitExit(T.plusMinutes(2));
            assertEquals(0, exit, child.describe());
            String result = child.stdout().lines().filter(l -> l.startsWith("RESULT ")).findFirst()
                    .orElseThrow(() -> new AssertionError("no RESULT line: " + child.describe()));
            String[] f = result.split(" ");
            System.out.println("fork: " + result);
            assertTrue(Integer.parseInt(f[1]) >= 15, result);
            assertTrue(Integer.parseInt(f[2]) >= 4, result);
            assertTrue(Integer.parseInt(f[4]) >= 20, result);
            assertEquals("FORK", f[5], result);
        }
    }
}
