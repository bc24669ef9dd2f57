package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.List;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

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

        Side(int granted, int peerGranted) {
            window = new CreditWindow(granted, peerGranted);
        }
    }

    private static final int ACTIONS = 9;

    @Property(tries = 400)
    void randomTrafficNeverLosesACreditNorOverrunsAWindowAndNeverDeadlocks(
            @ForAll @IntRange(min = 1, max = 12) int grantedByA,
            @ForAll @IntRange(min = 1, max = 12) int grantedByB,
            @ForAll @Size(max = 400) List<@IntRange(min = 0, max = ACTIONS * 2 - 1) Integer> actions) {
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
            peer.inbound.add(new Message(true, s.window.takeOwed()));
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
            peer.inbound.add(new Message(false, s.window.controlSent()));
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
        // Control messages need no credit, so they must fit in the control buffers: all but the one
        // kept for the orderly close.
        long controlsOnWire = sender.inbound.stream().filter(m -> !m.data()).count();
        assertTrue(controlsOnWire <= ConnectionOptions.CONTROL_RECEIVE_BUFFERS - 1,
                controlsOnWire + " control messages unprocessed: " + where);
    }
}
