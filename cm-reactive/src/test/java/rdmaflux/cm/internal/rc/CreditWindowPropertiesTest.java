package rdmaflux.cm.internal.rc;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaCmException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import rdmaflux.testing.RandomCases;

/**
 * Two {@link CreditWindow}s talking over a simulated RC connection, driven by random interleavings of
 * everything that can happen in either direction: an application sends, a message arrives, the
 * application releases one, a control message's send completes. The wire is FIFO per direction, as RC
 * is; a control's send may complete before or after the peer processed it, as on a real device.
 */
class CreditWindowPropertiesTest {

    /** A message on the wire: data (takes a receive buffer and a credit) or a control, with returned credits. */
    private record Message(boolean data, int credits) {
    }

    /** One side: its window, what its application holds, and what it still wants to send. */
    private static final class Side {
        final CreditWindow window;
        final ArrayDeque<Message> inbound = new ArrayDeque<>();
        int held;
        int waitingSends;
        int controlsAwaitingCompletion;
        /** Totals over the side's life, for the hostile-peer oracle. */
        long spent;
        long creditsSent;
        long creditsReceived;
        long dataReceived;

        Side(int granted, int peerGranted) {
            window = new CreditWindow(granted, peerGranted);
        }
    }

    private static final int ACTIONS = 9;

    @Test
    void randomTrafficNeverLosesACreditNorOverrunsAWindowAndNeverDeadlocks() {
        RandomCases.run(400, CreditWindowPropertiesTest::randomTraffic);
    }

    private static void randomTraffic(Random r) {
        int grantedByA = 1 + r.nextInt(12);
        int grantedByB = 1 + r.nextInt(12);
        int[] actions = r.ints(r.nextInt(401), 0, ACTIONS * 2).toArray();
        Side a = new Side(grantedByA, grantedByB);
        Side b = new Side(grantedByB, grantedByA);
        for (int action : actions) {
            boolean fromA = action < ACTIONS;
            step(fromA ? a : b, fromA ? b : a, action % ACTIONS);
            check(a, b);
            check(b, a);
        }
        // Quiescence: every application releases what it holds and the wire empties. Whatever the
        // history, each side must then be able to send again: no credit is stranded at its peer.
        for (int round = 0; round < 1000 && !quiet(a, b); round++) {
            for (Side[] pair : new Side[][] {{a, b}, {b, a}}) {
                Side s = pair[0];
                Side peer = pair[1];
                while (s.held > 0) {
                    release(s, peer);
                }
                while (!s.inbound.isEmpty()) {
                    deliver(s);
                }
                while (s.controlsAwaitingCompletion > 0) {
                    completeControl(s, peer);
                }
                sendWaiting(s, peer);
                check(a, b);
                check(b, a);
            }
        }
        assertTrue(quiet(a, b), "the sides never settled");
        assertTrue(a.window.available() > 0, "A can never send again: " + a.window + " / " + b.window);
        assertTrue(b.window.available() > 0, "B can never send again: " + b.window + " / " + a.window);
    }

    private static boolean quiet(Side a, Side b) {
        return a.held == 0 && b.held == 0 && a.inbound.isEmpty() && b.inbound.isEmpty()
                && a.controlsAwaitingCompletion == 0 && b.controlsAwaitingCompletion == 0
                && a.waitingSends == 0 && b.waitingSends == 0;
    }

    private static void step(Side s, Side peer, int action) {
        switch (action) {
            case 0, 1 -> {
                s.waitingSends++;
                sendWaiting(s, peer);
            }
            case 2, 3, 4 -> {
                if (!s.inbound.isEmpty()) {
                    deliver(s);
                }
            }
            case 5, 6 -> {
                if (s.held > 0) {
                    release(s, peer);
                }
            }
            case 7 -> {
                if (s.controlsAwaitingCompletion > 0) {
                    completeControl(s, peer);
                }
            }
            default -> sendWaiting(s, peer);
        }
    }

    /** Posts queued data while credits last, each carrying the owed credits, as RcQueue.tryPost does. */
    private static void sendWaiting(Side s, Side peer) {
        while (s.waitingSends > 0 && s.window.canSpend()) {
            s.window.spend();
            s.spent++;
            int credits = s.window.takeOwed();
            s.creditsSent += credits;
            peer.inbound.add(new Message(true, credits));
            s.waitingSends--;
        }
        maybeControl(s, peer);
    }

    private static void deliver(Side s) {
        Message m = s.inbound.poll();
        s.window.grant(m.credits());
        if (m.data()) {
            s.window.delivered();
            s.held++;
        }
    }

    private static void release(Side s, Side peer) {
        s.window.released();
        s.held--;
        maybeControl(s, peer);
    }

    private static void completeControl(Side s, Side peer) {
        s.controlsAwaitingCompletion--;
        s.window.controlCompleted();
        sendWaiting(s, peer);
    }

    private static void maybeControl(Side s, Side peer) {
        if (s.window.controlDue(s.waitingSends > 0)) {
            int credits = s.window.controlSent();
            s.creditsSent += credits;
            peer.inbound.add(new Message(false, credits));
            s.controlsAwaitingCompletion++;
        }
    }

    /** The invariants of the direction {@code sender} → {@code receiver}. */
    private static void check(Side sender, Side receiver) {
        int granted = receiver.window.granted();
        int dataOnWire = (int) receiver.inbound.stream().filter(Message::data).count();
        int creditsReturning = sender.inbound.stream().mapToInt(Message::credits).sum();
        String where = sender.window + " -> " + receiver.window;
        // Conservation: every credit is somewhere, exactly once.
        assertEquals(granted, sender.window.available() + dataOnWire + receiver.window.held()
                + receiver.window.owed() + creditsReturning, "credits lost or made up: " + where);
        assertEquals(receiver.held, receiver.window.held(), where);
        // The receiver's data buffers are never overrun: no RNR.
        assertTrue(dataOnWire + receiver.window.held() <= granted, "receive buffers overrun: " + where);
        assertTrue(sender.window.available() >= 0 && sender.window.available() <= granted, where);
        // What the receiver can see of it: the credits it gave and no data message used yet.
        assertEquals(sender.window.available() + dataOnWire + creditsReturning, receiver.window.outstanding(),
                "outstanding credits: " + where);
        // Control messages need no credit, so they must fit in the control buffers: all but the one
        // kept for the orderly close.
        long controlsOnWire = sender.inbound.stream().filter(m -> !m.data()).count();
        assertTrue(controlsOnWire <= ConnectionOptions.CONTROL_RECEIVE_BUFFERS - 1,
                controlsOnWire + " control messages unprocessed: " + where);
    }

    // ---------------------------------------------------------------- a hostile peer

    private static final AtomicInteger DATA_CAUGHT = new AtomicInteger();
    private static final AtomicInteger CREDITS_CAUGHT = new AtomicInteger();
    private static final AtomicInteger FORGERIES = new AtomicInteger();

    /**
     * B is hostile: between legal steps it sometimes sends a data message without spending a credit,
     * or returns more credits than it owes. A, whose window is checked, must throw
     * {@link RdmaCmException.ProtocolViolation} exactly when what it can see proves the peer broke the
     * rule: B's data messages so far exceed the credits A ever gave it (its hello and every return), or
     * B's returned credits so far exceed those A spent. It must never throw otherwise (a message sent
     * early on a credit already on its way back cannot be told from a legal one). The case ends at
     * the first violation, as the connection would.
     */
    @Test
    void aHostilePeerIsCaughtExactlyWhenItsMessagesProveIt() {
        DATA_CAUGHT.set(0);
        CREDITS_CAUGHT.set(0);
        FORGERIES.set(0);
        RandomCases.run(400, CreditWindowPropertiesTest::hostileTraffic);
        // The cases really exercise both checks, and forgeries the receiver cannot tell yet.
        assertTrue(DATA_CAUGHT.get() > 20, "data messages without credit caught: " + DATA_CAUGHT.get());
        assertTrue(CREDITS_CAUGHT.get() > 20, "credit overflows caught: " + CREDITS_CAUGHT.get());
        assertTrue(FORGERIES.get() > DATA_CAUGHT.get() + CREDITS_CAUGHT.get(), "forgeries: " + FORGERIES.get());
    }

    private static void hostileTraffic(Random r) {
        int grantedByA = 1 + r.nextInt(12);
        int grantedByB = 1 + r.nextInt(12);
        Side a = new Side(grantedByA, grantedByB);
        Side b = new Side(grantedByB, grantedByA);
        int forgeryOdds = 5 + r.nextInt(60); // one step in that many is a forgery
        int steps = r.nextInt(401);
        for (int i = 0; i < steps; i++) {
            int action = r.nextInt(ACTIONS * 2);
            if (action >= ACTIONS) {
                Side peer = a;
                if (r.nextInt(forgeryOdds) == 0) {
                    FORGERIES.incrementAndGet();
                    int owed = b.window.takeOwed(); // what it may legally return, plus its forgery
                    if (r.nextBoolean()) {
                        peer.inbound.add(new Message(true, owed)); // no credit spent
                    } else {
                        peer.inbound.add(new Message(r.nextBoolean(), owed + 1 + r.nextInt(4)));
                    }
                    continue;
                }
                hostileStep(b, a, action % ACTIONS);
            } else if (!checkedStep(a, b, action)) {
                return; // A failed the connection
            }
        }
    }

    /** A legal step of the hostile side, whose own books are off after its forgeries: it ignores its checks. */
    private static void hostileStep(Side b, Side a, int action) {
        if (action >= 2 && action <= 4 && !b.inbound.isEmpty()) {
            Message m = b.inbound.poll();
            // A keeps to the rule, but B's own books are off: A returns credits for B's forged messages
            // too, which B never spent, and spends the credits B made up, which B never gave.
            try {
                b.window.grant(m.credits());
            } catch (RdmaCmException.ProtocolViolation ignored) {
                // B goes on regardless
            }
            if (m.data()) {
                try {
                    b.window.delivered();
                    b.held++;
                } catch (RdmaCmException.ProtocolViolation ignored) {
                    // B goes on regardless
                }
            }
            return;
        }
        step(b, a, action);
    }

    /**
     * A step of the checked side; a delivery is checked against the oracle.
     *
     * @return false when A caught a violation (the case ends)
     */
    private static boolean checkedStep(Side a, Side b, int action) {
        if (action < 2 || action > 4 || a.inbound.isEmpty()) {
            step(a, b, action);
            return true;
        }
        Message m = a.inbound.poll();
        String where = a.window + " receiving " + m;
        // RcQueue takes the credits first, then counts the data message.
        if (a.creditsReceived + m.credits() > a.spent) {
            assertThrows(RdmaCmException.ProtocolViolation.class, () -> a.window.grant(m.credits()), where);
            CREDITS_CAUGHT.incrementAndGet();
            return false;
        }
        a.window.grant(m.credits());
        a.creditsReceived += m.credits();
        if (m.data()) {
            if (a.dataReceived + 1 > a.window.granted() + a.creditsSent) {
                assertThrows(RdmaCmException.ProtocolViolation.class, a.window::delivered, where);
                DATA_CAUGHT.incrementAndGet();
                return false;
            }
            a.window.delivered();
            a.dataReceived++;
            a.held++;
        }
        assertTrue(a.window.available() <= a.window.peerGranted(), a.window.toString());
        return true;
    }
}
