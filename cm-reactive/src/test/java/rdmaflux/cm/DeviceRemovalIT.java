package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.test.StepVerifier;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.AccessFlags;

/**
 * The device goes away under a running process ({@code rdma link delete}, as a chaos test found): Soft-RoCE
 * cannot disassociate a user context, so the kernel's removal waits until the process has closed everything
 * it made on the device. The removal must finish while this JVM lives; every connection, the server bound to
 * the device's address, the multicast membership and the datagram endpoint fail with
 * {@link RdmaCmException.DeviceRemoved}; a
 * registered buffer refuses further use; and once the device is added again a new server, connection and
 * echo work in the same JVM and loops, as does the wildcard server, which was on no device.
 *
 * <p>Root in the sandbox VM (the lanes run as root). The device is added back in {@code finally}: the lane's
 * other classes run in this VM after this one.
 */
class DeviceRemovalIT {
    private static final Duration T = RdmaTestEnv.scaled(Duration.ofMinutes(1));
    /** The deletion took 17 to 603 ms once the process that held the device was killed. */
    private static final Duration DELETE_BOUND = RdmaTestEnv.scaled(Duration.ofSeconds(10));
    private static final ConnectionOptions OPTIONS = PeerMain.OPTIONS;
    private static final Pattern NETDEV = Pattern.compile("\\bnetdev (\\S+)");

    @Test
    void removingTheDeviceFailsWhatIsOnItFreesItAndTheDeviceAddedAgainServes() throws Exception {
        String device = RdmaTestEnv.device();
        InetAddress address = RdmaTestEnv.address();
        String netdev = netdevOf(device);
        Process delete = null;
        try (EchoServer wildcard = new EchoServer(new InetSocketAddress("0.0.0.0", 0), OPTIONS,
                AcceptFilter.ACCEPT_ALL)) {
            int wildcardPort = wildcard.address().getPort();
            // A server bound to the device's address, with its connections' end and its own end recorded.
            RdmaServer bound = RdmaServer.bind(new InetSocketAddress(address, 0), OPTIONS, AcceptFilter.ACCEPT_ALL)
                    .block(T);
            AtomicReference<Throwable> boundEnd = new AtomicReference<>();
            LinkedBlockingQueue<RdmaConnection> accepted = new LinkedBlockingQueue<>();
            Disposable serving = bound.connections().subscribe(c -> {
                accepted.add(c);
                EchoServer.echo(c, OPTIONS);
            }, boundEnd::set);

            RdmaConnection a = RdmaConnection.connect(bound.address(), OPTIONS).block(T);
            LinkedBlockingQueue<Object> aInbox = new LinkedBlockingQueue<>();
            a.receiveBytes().subscribe(aInbox::add, aInbox::add);
            RdmaConnection w = RdmaConnection.connect(new InetSocketAddress(address, wildcardPort), OPTIONS).block(T);
            LinkedBlockingQueue<Object> wInbox = new LinkedBlockingQueue<>();
            w.receiveBytes().subscribe(wInbox::add, wInbox::add);
            int seq = echo(a, aInbox, 0);
            seq = echo(w, wInbox, seq);

            // A registered buffer in use: sent from where it is, echoed back.
            Arena arena = Arena.ofAuto();
            RegisteredBuffer region = a.register(arena.allocate(4096, 4096), AccessFlags.REMOTE_ALL);
            region.segment().copyFrom(java.lang.foreign.MemorySegment.ofBuffer(Payloads.message(seq, 1024)));
            a.send(region.slice(0, 1024)).block(T);
            Payloads.verify(Inbox.take(aInbox, T), seq, 1024);
            region.remote(); // usable while the device is there

            MulticastMembership member = RdmaMulticast.join(InetAddress.getByName("239.1.9.1"),
                    MulticastOptions.builder().localAddress(address).build()).block(T);
            AtomicReference<Throwable> memberEnd = new AtomicReference<>();
            member.datagrams().subscribe(d -> { }, memberEnd::set);

            RdmaDatagramEndpoint endpoint = RdmaDatagramEndpoint.bind(new InetSocketAddress(address, 0)).block(T);
            AtomicReference<Throwable> endpointEnd = new AtomicReference<>();
            endpoint.receive().subscribe(d -> { }, endpointEnd::set);

            long started = System.nanoTime();
            delete = new ProcessBuilder("rdma", "link", "delete", device).redirectErrorStream(true).start();
            if (!delete.waitFor(DELETE_BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
                fail("rdma link delete " + device + " still waits after " + DELETE_BOUND + " while this JVM lives; "
                        + "what the process still has open: " + diagnostics());
            }
            long tookMillis = (System.nanoTime() - started) / 1_000_000;
            assertEquals(0, delete.exitValue(), "rdma link delete: " + output(delete));
            System.out.println("device removal: rdma link delete " + device + " took " + tookMillis + " ms (bound "
                    + DELETE_BOUND.toMillis() + " ms)");

            awaitDeviceRemoved("the client on the bound server", aInbox);
            awaitDeviceRemoved("the client on the wildcard server", wInbox);
            Awaitility.await("the bound server's end").atMost(T).until(() -> boundEnd.get() != null);
            assertInstanceOf(RdmaCmException.DeviceRemoved.class, boundEnd.get());
            Awaitility.await("the membership's end").atMost(T).until(() -> memberEnd.get() != null);
            assertInstanceOf(RdmaCmException.DeviceRemoved.class, memberEnd.get(), () -> describe(memberEnd.get()));
            Awaitility.await("the datagram endpoint's end").atMost(T).until(() -> endpointEnd.get() != null);
            assertInstanceOf(RdmaCmException.DeviceRemoved.class, endpointEnd.get(), () -> describe(endpointEnd.get()));
            Awaitility.await("the accepted connections' teardown").atMost(T)
                    .until(() -> accepted.stream().allMatch(RdmaConnection::isDisposed));
            // The buffer's registration went with the device: a clear refusal, not a stale key or a crash.
            IllegalStateException stale = assertThrows(IllegalStateException.class, region::remote);
            System.out.println("device removal: the registered buffer now says: " + stale.getMessage());
            // The connection ended with the device: a send of a buffer its teardown closed says so, typed.
            StepVerifier.create(a.send(region.slice(0, 64)))
                    .expectErrorSatisfies(e -> assertInstanceOf(RdmaCmException.DeviceRemoved.class, e,
                            () -> describe(e)))
                    .verify(T);
            assertThrows(IllegalStateException.class, () -> a.register(arena.allocate(4096, 4096), AccessFlags.REMOTE_ALL));
            String resources = run("rdma", "resource", "show");
            assertFalse(resources.contains(device + ":"), "the removed device's resources: " + resources);
            a.dispose();
            w.dispose();
            member.dispose();
            endpoint.dispose();
            serving.dispose();

            // Back: the same loops make new resources on the new device.
            String added = run("rdma", "link", "add", device, "type", "rxe", "netdev", netdev);
            Awaitility.await(device + " active again").atMost(T).pollInterval(Duration.ofMillis(200))
                    .until(() -> run("rdma", "link", "show", device + "/1").contains("state ACTIVE"));
            System.out.println("device removal: added again: " + added.strip());
            try (EchoServer again = new EchoServer(OPTIONS)) {
                RdmaConnection b = RdmaConnection.connect(again.address(), OPTIONS).block(T);
                LinkedBlockingQueue<Object> bInbox = new LinkedBlockingQueue<>();
                b.receiveBytes().subscribe(bInbox::add, bInbox::add);
                for (int i = 0; i < 3; i++) {
                    seq = echo(b, bInbox, seq);
                }
                RegisteredBuffer fresh = b.register(arena.allocate(4096, 4096), AccessFlags.REMOTE_ALL);
                fresh.remote();
                // The old buffer is of the removed device's domain: refused, named as such.
                StepVerifier.create(b.send(region.slice(0, 64)))
                        .expectErrorSatisfies(e -> assertTrue(e instanceof IllegalArgumentException
                                || e instanceof IllegalStateException, () -> describe(e)))
                        .verify(T);
                RdmaConnection w2 = RdmaConnection.connect(new InetSocketAddress(address, wildcardPort), OPTIONS)
                        .block(T);
                LinkedBlockingQueue<Object> w2Inbox = new LinkedBlockingQueue<>();
                w2.receiveBytes().subscribe(w2Inbox::add, w2Inbox::add);
                seq = echo(w2, w2Inbox, seq);
                System.out.println("device removal: the wildcard server serves on the device added again");
                MulticastMembership again2 = RdmaMulticast.join(InetAddress.getByName("239.1.9.1"),
                        MulticastOptions.builder().localAddress(address).build()).block(T);
                again2.dispose();
                again2.onDispose().block(T);
                fresh.close();
                w2.disposeNow(T);
                b.disposeNow(T);
            }
            bound.dispose();
        } finally {
            restore(device, netdev, delete);
        }
    }

    /** {@return the netdev the rxe device is on, from {@code rdma link show}} */
    private static String netdevOf(String device) {
        String out = run("rdma", "link", "show", device + "/1");
        Matcher m = NETDEV.matcher(out);
        assertTrue(m.find(), "no netdev in: " + out);
        return m.group(1);
    }

    /** Sends message {@code seq} and checks its echo; {@return the next sequence number} */
    private static int echo(RdmaConnection c, LinkedBlockingQueue<Object> inbox, int seq) {
        c.send(Payloads.message(seq, 1024)).block(T);
        Payloads.verify(Inbox.take(inbox, T), seq, 1024);
        return seq + 1;
    }

    /** What ended {@code inbox}'s {@code receive()}, skipping echoes still queued, must be the removal. */
    private static void awaitDeviceRemoved(String what, LinkedBlockingQueue<Object> inbox) throws InterruptedException {
        long deadline = System.nanoTime() + T.toNanos();
        while (System.nanoTime() < deadline) {
            Object o = inbox.poll(200, TimeUnit.MILLISECONDS);
            if (o instanceof Throwable t) {
                assertInstanceOf(RdmaCmException.DeviceRemoved.class, t, () -> what + ": " + describe(t));
                return;
            }
        }
        fail(what + ": receive() did not end within " + T);
    }

    private static String describe(Throwable t) {
        java.io.StringWriter s = new java.io.StringWriter();
        t.printStackTrace(new java.io.PrintWriter(s));
        return s.toString();
    }

    /** The device is there again whatever happened, for the lane's next classes. */
    private static void restore(String device, String netdev, Process delete) throws InterruptedException {
        if (delete != null && delete.isAlive() && !delete.waitFor(T.toMillis(), TimeUnit.MILLISECONDS)) {
            System.out.println("device removal: rdma link delete still waits; the lane's later classes may fail");
            return;
        }
        if (!run("rdma", "link", "show").contains(device + "/")) {
            System.out.println("device removal: restoring " + device + ": "
                    + run("rdma", "link", "add", device, "type", "rxe", "netdev", netdev).strip());
            Awaitility.await(device + " active again").atMost(T).pollInterval(Duration.ofMillis(200))
                    .until(() -> run("rdma", "link", "show", device + "/1").contains("state ACTIVE"));
        }
    }

    /** What the process still holds of RDMA: its uverbs descriptors and the kernel's resource counts. */
    private static String diagnostics() {
        StringBuilder b = new StringBuilder();
        b.append(run("rdma", "resource", "show"));
        try (var fds = java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/fd"))) {
            List<String> held = fds.map(p -> {
                try {
                    return java.nio.file.Files.readSymbolicLink(p).toString();
                } catch (IOException e) {
                    return "?";
                }
            }).filter(l -> l.contains("infiniband") || l.contains("rdma") || l.contains("uverbs")).toList();
            b.append("; descriptors: ").append(held);
        } catch (IOException e) {
            b.append("; descriptors unreadable: ").append(e);
        }
        return b.toString();
    }

    private static String output(Process p) {
        try {
            return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(unreadable: " + e + ")";
        }
    }

    /** Runs a command to its end (a bounded wait) and {@return its output}; a non-zero exit is in the output. */
    private static String run(String... command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            if (!p.waitFor(T.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                throw new AssertionError(String.join(" ", command) + " did not finish within " + T);
            }
            String out = output(p);
            return p.exitValue() == 0 ? out : out + " (exit " + p.exitValue() + ")";
        } catch (IOException e) {
            throw new AssertionError("cannot run " + String.join(" ", command), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
