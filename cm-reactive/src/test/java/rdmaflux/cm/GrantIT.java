package rdmaflux.cm;

import rdmaflux.cm.internal.memory.Registration;
import rdmaflux.cm.internal.rc.WindowGrant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import reactor.test.StepVerifier;
import rdmaflux.testing.RdmaTestEnv;
import rdmaflux.verbs.AccessFlag;
import rdmaflux.verbs.AccessFlags;
import rdmaflux.verbs.RemoteBuffer;
import rdmaflux.verbs.WcStatus;

/**
 * Grants ({@link RdmaConnection#grant}) on Soft-RoCE: the server side registers memory the peer can reach
 * only through grants (no remote access of its own) and hands the grant's key to the client side, in the
 * same process. A remote access error fails the requester's connection (both QPs go to the error state),
 * so every refused access is the last operation of its connection.
 */
class GrantIT {
    private static final Duration T = Duration.ofSeconds(60);
    private static final int REGION = 8192;
    private static final AccessFlags GRANTABLE = AccessFlags.of(AccessFlag.LOCAL_WRITE, AccessFlag.MW_BIND);

    private RdmaServer server;
    private final BlockingQueue<RdmaConnection> accepted = new LinkedBlockingQueue<>();
    private Arena arena;

    @BeforeEach
    void bind() {
        server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), ConnectionOptions.defaults(),
                AcceptFilter.ACCEPT_ALL).block(T);
        server.connections().subscribe(accepted::add);
        arena = Arena.ofShared();
    }

    @AfterEach
    void close() {
        server.disposeNow(T);
        arena.close();
    }

    /** A client connection and the server's side of it (which grants). */
    private record Pair(RdmaConnection client, RdmaConnection owner) {
    }

    private Pair connect() throws InterruptedException {
        RdmaConnection c = RdmaConnection.connect(server.address()).block(T);
        RdmaConnection s = accepted.poll(T.toSeconds(), TimeUnit.SECONDS);
        assertTrue(s != null, "the server accepted nothing");
        return new Pair(c, s);
    }

    private static void expectRemoteAccessError(reactor.core.publisher.Mono<?> op) {
        StepVerifier.create(op).expectErrorSatisfies(e -> {
            RdmaCmException.CompletionError ce = assertInstanceOf(RdmaCmException.CompletionError.class, e);
            assertEquals(WcStatus.REM_ACCESS_ERR, ce.wcStatus(), ce.getMessage());
        }).verify(T);
    }

    @Test
    void peerReadsAndWritesThroughAGrantUntilItIsRevoked() throws InterruptedException {
        Pair p = connect();
        RegisteredBuffer memory = p.owner().register(arena.allocate(REGION, 4096), GRANTABLE);
        // Local-only: the region's own key grants nothing, so there is no descriptor to hand out.
        assertThrows(IllegalStateException.class, memory::remote);
        RdmaGrant grant = p.owner().grant(memory, AccessFlags.of(AccessFlag.REMOTE_READ, AccessFlag.REMOTE_WRITE))
                .block(T);
        assertEquals(REGION, grant.remote().length());
        assertEquals(memory.segment().address(), grant.remote().address());

        RegisteredBuffer local = p.client().register(arena.allocate(REGION, 4096), AccessFlags.LOCAL_WRITE);
        fill(local.segment(), 7);
        p.client().write(local, grant.remote()).block(T);
        assertEquals(-1, local.segment().mismatch(memory.segment()), "the write landed");
        local.segment().fill((byte) 0);
        fill(memory.segment(), 8);
        p.client().read(local, grant.remote()).block(T);
        assertEquals(-1, local.segment().mismatch(memory.segment()), "the read returned the owner's bytes");

        grant.revoke().block(T);
        grant.revoke().block(T); // idempotent

        // The memory is still registered: a new grant over it works, with another key.
        RdmaGrant again = p.owner().grant(memory.slice(0, 4096), AccessFlags.of(AccessFlag.REMOTE_READ)).block(T);
        assertNotEquals(grant.remote().rkey(), again.remote().rkey());
        p.client().read(local.slice(0, 4096), again.remote()).block(T);

        assertFalse(Registration.of(memory).region().isClosed(), "revoking deregistered the memory");

        // The revoked key is dead: the peer's access fails, and with it the peer's connection. The owner's
        // queue pair, which refused it, went to the error state too: its connection ends at once and frees
        // its registrations.
        expectRemoteAccessError(p.client().read(local, grant.remote()));
        p.owner().onDispose().block(T);
        p.client().dispose();
    }

    @Test
    void writeThroughAReadOnlyGrantFails() throws InterruptedException {
        Pair p = connect();
        RegisteredBuffer memory = p.owner().register(arena.allocate(REGION, 4096), GRANTABLE);
        RdmaGrant grant = p.owner().grant(memory.slice(0, 4096), AccessFlags.of(AccessFlag.REMOTE_READ)).block(T);
        RegisteredBuffer local = p.client().register(arena.allocate(REGION, 4096), AccessFlags.LOCAL_WRITE);
        p.client().read(local.slice(0, 4096), grant.remote()).block(T);
        // Soft-RoCE (Linux 6.1) checks the key against the whole region, not the granted range: a read of the
        // region's second half, outside the grant, succeeds. Hardware following the spec refuses it.
        RemoteBuffer outside = new RemoteBuffer(grant.remote().address() + 4096, 4096, grant.remote().rkey());
        p.client().read(local.slice(0, 4096), outside).block(T);
        expectRemoteAccessError(p.client().write(local.slice(0, 4096), grant.remote()));
        // The failed peer disconnects, which ends the granting side's connection too, without a dispose.
        p.owner().onDispose().block(T);
        p.client().dispose();
    }

    @Test
    void aGrantWorksOnlyOnItsOwnConnection() throws InterruptedException {
        Pair mine = connect();
        Pair other = connect();
        RegisteredBuffer memory = mine.owner().register(arena.allocate(REGION, 4096), GRANTABLE);
        RdmaGrant grant = mine.owner().grant(memory, AccessFlags.of(AccessFlag.REMOTE_READ)).block(T);
        RegisteredBuffer local = other.client().register(arena.allocate(REGION, 4096), AccessFlags.LOCAL_WRITE);
        // The key is known to the device, and both connections are in the same protection domain (their
        // loops' one for the device), but only the QP the window was bound through honours it.
        expectRemoteAccessError(other.client().read(local, grant.remote()));
        RegisteredBuffer mineLocal = mine.client().register(arena.allocate(REGION, 4096), AccessFlags.LOCAL_WRITE);
        mine.client().read(mineLocal, grant.remote()).block(T);
        for (Pair p : List.of(mine, other)) {
            p.client().dispose();
            p.owner().dispose();
        }
    }

    @Test
    void grantsAreCheckedBeforeAnythingIsPosted() throws InterruptedException {
        Pair p = connect();
        RegisteredBuffer plain = p.owner().register(arena.allocate(REGION, 4096), AccessFlags.LOCAL_WRITE);
        StepVerifier.create(p.owner().grant(plain, AccessFlags.of(AccessFlag.REMOTE_READ)))
                .expectError(IllegalArgumentException.class).verify(T);
        RegisteredBuffer memory = p.owner().register(arena.allocate(REGION, 4096), GRANTABLE);
        StepVerifier.create(p.owner().grant(memory, AccessFlags.LOCAL_WRITE))
                .expectError(IllegalArgumentException.class).verify(T);
        // A buffer of another protection domain: registered through a connection of other loops. (One of
        // another connection of the same loops is in this domain, and so grantable.)
        RdmaLoops other = RdmaLoops.create("rdmaflux-it-grant-other", 1);
        try {
            RdmaConnection elsewhere = RdmaConnection.connect(server.address(),
                    ConnectionOptions.defaults().toBuilder().loops(other).build()).block(T);
            RdmaConnection elsewhereServed = accepted.poll(T.toSeconds(), TimeUnit.SECONDS);
            RegisteredBuffer foreign = elsewhere.register(arena.allocate(REGION, 4096), GRANTABLE);
            StepVerifier.create(p.owner().grant(foreign, AccessFlags.of(AccessFlag.REMOTE_READ)))
                    .expectError(IllegalArgumentException.class).verify(T);
            elsewhere.disposeNow(T);
            if (elsewhereServed != null) {
                elsewhereServed.dispose();
            }
        } finally {
            other.disposeNow(T);
        }
        // The connection is unharmed.
        RegisteredBuffer local = p.client().register(arena.allocate(REGION, 4096), GRANTABLE);
        RdmaGrant grant = p.owner().grant(memory, AccessFlags.of(AccessFlag.REMOTE_READ)).block(T);
        p.client().read(local, grant.remote()).block(T);
        p.client().dispose();
        p.owner().dispose();
    }

    @Test
    void theConnectionsEndRevokesEveryGrantAndFreesEverything() throws InterruptedException {
        Map<String, Integer> baseline = Resources.baseline();
        Pair p = connect();
        RegisteredBuffer memory = p.owner().register(arena.allocate(REGION, 4096), GRANTABLE);
        WindowGrant revoked = (WindowGrant) p.owner().grant(memory, AccessFlags.of(AccessFlag.REMOTE_READ)).block(T);
        revoked.revoke().block(T);
        assertTrue(revoked.window.isClosed(), "a revoked grant's window is freed at once");
        List<WindowGrant> live = List.of(
                (WindowGrant) p.owner().grant(memory.slice(0, 4096), AccessFlags.of(AccessFlag.REMOTE_READ)).block(T),
                (WindowGrant) p.owner().grant(memory.slice(4096, 4096), AccessFlags.of(AccessFlag.REMOTE_WRITE))
                        .block(T));
        // Closing the registration under live grants defers its deregistration.
        memory.close();
        assertFalse(Registration.of(memory).region().isClosed(), "deregistered under live grants");
        StepVerifier.create(p.owner().grant(memory, AccessFlags.of(AccessFlag.REMOTE_READ)))
                .expectError(IllegalStateException.class).verify(T);

        p.owner().disposeNow(T);
        for (WindowGrant g : live) {
            assertTrue(g.window.isClosed(), "window of " + g + " outlived its connection");
            // Revoking after the end is a no-op that completes: the key died with the queue pair.
            g.revoke().block(T);
        }
        assertTrue(Registration.of(memory).region().isClosed(), "the deferred deregistration did not happen");
        p.client().disposeNow(T);
        // rdma resource show has no memory window count: the windows are checked above, the PD, QPs and MRs here.
        Resources.awaitBaseline(baseline, T, "after grants and their connection");
    }

    private static void fill(MemorySegment s, int seq) {
        MemorySegment.copy(MemorySegment.ofBuffer(Payloads.message(seq, (int) s.byteSize())), 0, s, 0, s.byteSize());
    }
}
