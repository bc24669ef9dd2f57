package rdmaflux.cm.internal.rc;

import rdmaflux.cm.ConnectionOptions;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.Test;
import rdmaflux.testing.RandomCases;

/**
 * Many connections' senders and one receiver whose connections share a {@link SharedCredits} pool, each
 * connection with its own pair of {@link CreditWindow}s, driven by random interleavings: a peer sends data
 * or a control message, a message lands (in a posted buffer, or it would be an RNR), the application
 * releases a message, the receiver returns credits, connections leave and join. Checked after every step:
 * every message finds a posted buffer, and more: the buffers posted cover everything every live peer
 * could send without a further release; no credit is lost; the reserve and the loan cap hold; and at the
 * end, with one connection never releasing anything, every other connection gets its whole quota back.
 */
class SharedCreditsPropertiesTest {
    private static final int CONTROL = ConnectionOptions.CONTROL_RECEIVE_BUFFERS;

    /** A message held by the receiving application. */
    private record Held(boolean lent) {
    }

    /** One connection: the peer's window (its sending side) and the receiver's, and the two wires. */
    private static final class Conn {
        final SharedCredits.Member member;
        final CreditWindow peer;
        final CreditWindow receiver;
        /** Peer to receiver, FIFO: true for data, false for a control message. */
        final ArrayDeque<Boolean> wire = new ArrayDeque<>();
        /** Receiver to peer: the credits each control message returns. */
        final ArrayDeque<Integer> back = new ArrayDeque<>();
        final List<Held> held = new ArrayList<>();
        int peerControls;
        boolean receiverControlPosted;
        boolean live = true;

        Conn(SharedCredits.Member member, int quota) {
            this.member = member;
            this.peer = new CreditWindow(1, quota);
            this.receiver = new CreditWindow(quota, 0);
        }

        int wireData() {
            int n = 0;
            for (boolean d : wire) {
                n += d ? 1 : 0;
            }
            return n;
        }

        int travelling() {
            int n = 0;
            for (int c : back) {
                n += c;
            }
            return n;
        }
    }

    @Test
    void randomTrafficNeverOverrunsThePostedBuffersNorLosesACredit() {
        RandomCases.run(300, SharedCreditsPropertiesTest::randomTraffic);
    }

    private static void randomTraffic(Random r) {
        int quota = 1 + r.nextInt(6);
        int reserve = r.nextInt(10);
        int loanCap = reserve == 0 ? 0 : r.nextInt(reserve + 1);
        int fit = 1 + r.nextInt(5);
        int buffers = fit * (quota + CONTROL) + reserve + r.nextInt(quota + CONTROL);
        SharedCredits pool = new SharedCredits(buffers, quota, CONTROL, reserve, loanCap);
        assertEquals(fit, pool.capacity());
        List<Conn> conns = new ArrayList<>();
        for (int i = 0; i < fit; i++) {
            conns.add(new Conn(assertJoins(pool), quota));
        }
        int steps = r.nextInt(600);
        for (int s = 0; s < steps; s++) {
            Conn c = conns.get(r.nextInt(conns.size()));
            switch (r.nextInt(9)) {
                case 0, 1 -> {
                    if (c.live && c.peer.canSpend()) {
                        c.peer.spend();
                        c.wire.add(true);
                    }
                }
                case 2 -> {
                    if (c.live && c.peerControls < CONTROL) {
                        c.peerControls++;
                        c.wire.add(false);
                    }
                }
                case 3, 4 -> land(pool, c, r);
                case 5 -> release(pool, c, r);
                case 6 -> returnCredits(c, r);
                case 7 -> {
                    if (!c.back.isEmpty()) {
                        c.peer.grant(c.back.poll());
                    }
                }
                default -> {
                    if (r.nextInt(8) == 0) {
                        if (c.live) {
                            leave(pool, c);
                        } else {
                            SharedCredits.Member m = pool.join();
                            if (m != null) {
                                conns.add(new Conn(m, quota));
                            }
                        }
                    }
                }
            }
            check(pool, conns, quota, reserve, loanCap);
        }
        // One live connection (if any) never releases again; every other one gets its quota back.
        Conn slow = conns.stream().filter(x -> x.live).findFirst().orElse(null);
        for (int round = 0; round < 100; round++) {
            for (Conn c : conns) {
                while (c.live && !c.wire.isEmpty()) {
                    land(pool, c, r);
                }
                while (c != slow && !c.held.isEmpty()) {
                    release(pool, c, r);
                }
                while (c.live && c.receiver.controlDue(false) || c.receiverControlPosted || !c.back.isEmpty()) {
                    returnCredits(c, r);
                    if (!c.back.isEmpty()) {
                        c.peer.grant(c.back.poll());
                    }
                }
                check(pool, conns, quota, reserve, loanCap);
            }
        }
        for (Conn c : conns) {
            if (c.live && c != slow) {
                // Its whole quota is its peer's or owed to it (a few owed credits wait for a data message
                // or for more to owe, as with a connection's own buffers), and it can send.
                assertEquals(quota, c.peer.available() + c.receiver.owed(),
                        () -> "a connection did not get its quota back: " + pool);
                assertTrue(c.peer.canSpend(), () -> "a connection cannot send: " + pool);
            }
            if (!c.live && c != slow) {
                assertEquals(0, c.member.held());
            }
        }
        if (slow != null) {
            assertTrue(slow.held.size() <= quota + CONTROL + loanCap, "the slow connection holds too much");
        }
    }

    private static SharedCredits.Member assertJoins(SharedCredits pool) {
        SharedCredits.Member m = pool.join();
        assertNotNull(m, () -> "a connection within the capacity was refused: " + pool);
        return m;
    }

    /** The oldest message on the wire lands in a posted buffer. */
    private static void land(SharedCredits pool, Conn c, Random r) {
        if (!c.live || c.wire.isEmpty()) {
            return;
        }
        assertTrue(pool.posted() > 0, () -> "receiver not ready: no buffer posted for a message: " + pool);
        boolean data = c.wire.poll();
        pool.landed(c.member);
        if (!data) {
            c.peerControls--;
            pool.reposted(c.member, false); // a control message is processed and reposted at once
            return;
        }
        c.receiver.delivered();
        boolean lent = pool.lend(c.member);
        if (lent) {
            c.receiver.released(); // its credit is owed at once
        }
        c.held.add(new Held(lent));
    }

    private static void release(SharedCredits pool, Conn c, Random r) {
        if (c.held.isEmpty()) {
            return;
        }
        Held h = c.held.remove(r.nextInt(c.held.size()));
        if (!h.lent()) {
            if (c.live) {
                c.receiver.released();
            } else {
                c.receiver.dropped();
            }
        }
        pool.reposted(c.member, h.lent());
    }

    /** The receiver posts a credit update when its window says so, or the last one's send completes. */
    private static void returnCredits(Conn c, Random r) {
        if (c.receiverControlPosted && r.nextBoolean()) {
            c.receiver.controlCompleted();
            c.receiverControlPosted = false;
        }
        if (c.live && c.receiver.controlDue(false)) {
            c.back.add(c.receiver.controlSent());
            c.receiverControlPosted = true;
        }
    }

    private static void leave(SharedCredits pool, Conn c) {
        c.live = false;
        c.wire.clear(); // what was in flight never lands: the queue pair is gone
        c.back.clear();
        pool.leave(c.member);
    }

    private static void check(SharedCredits pool, List<Conn> conns, int quota, int reserve, int loanCap) {
        long potential = 0;
        int lent = 0;
        for (Conn c : conns) {
            lent += c.member.lent();
            assertTrue(c.member.lent() <= loanCap, "a connection borrowed beyond the cap");
            if (!c.live) {
                continue;
            }
            int unlentHeld = (int) c.held.stream().filter(h -> !h.lent()).count();
            assertEquals(unlentHeld, c.receiver.held());
            // Conservation: no credit lost or made up.
            assertEquals(quota, c.peer.available() + c.wireData() + c.receiver.held() + c.receiver.owed()
                    + c.travelling(), () -> "a credit was lost: " + pool);
            // Everything this peer may send before another release: its credits, wherever they are, and
            // its control messages.
            potential += c.peer.available() + c.wireData() + c.travelling() + c.receiver.owed() + CONTROL;
        }
        assertEquals(lent, pool.lent());
        assertTrue(lent <= reserve, "the reserve was overdrawn");
        long p = potential;
        assertTrue(pool.posted() >= potential, () -> "posted " + pool.posted() + " < " + p
                + " the peers may send: " + pool);
    }
}
