package rdmaflux.cm.internal.rc;

import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.Step;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CreditWindowTest {

    /** A window in the given state, reached through its own operations only. */
    private static CreditWindow window(int granted, int available, int owed, int held, boolean controlInFlight) {
        CreditWindow w = new CreditWindow(granted, available);
        if (controlInFlight) {
            // A control needs something owed; send one carrying a credit, then rebuild owed below.
            w.delivered();
            w.released();
            w.controlSent();
        }
        for (int i = 0; i < owed + held; i++) {
            w.delivered();
        }
        for (int i = 0; i < owed; i++) {
            w.released();
        }
        assertEquals(available, w.available());
        assertEquals(owed, w.owed());
        assertEquals(held, w.held());
        assertEquals(controlInFlight, w.controlInFlight());
        return w;
    }

    /** The rule of when to send a credit update, written down apart from the implementation. */
    private static boolean expectedDue(int granted, int available, int owed, int held, boolean inFlight,
                                       boolean dataWaiting) {
        if (owed == 0 || inFlight) {
            return false;
        }
        if (dataWaiting && available > 0) {
            return false; // the next data send carries them
        }
        return 2 * owed > granted - (granted % 2) || owed + held >= granted;
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4, 7, 8})
    void controlDueMatchesTheRuleInEveryReachableState(int granted) {
        int checked = 0;
        for (int available = 0; available <= granted; available++) {
            for (int owed = 0; owed <= granted; owed++) {
                for (int held = 0; owed + held <= granted; held++) {
                    for (boolean inFlight : new boolean[] {false, true}) {
                        for (boolean waiting : new boolean[] {false, true}) {
                            CreditWindow w = window(granted, available, owed, held, inFlight);
                            assertEquals(expectedDue(granted, available, owed, held, inFlight, waiting),
                                    w.controlDue(waiting), w + ", data waiting " + waiting);
                            checked++;
                        }
                    }
                }
            }
        }
        assertTrue(checked > 0);
    }

    @Test
    void halfTheWindowOwedIsNotYetAnUpdateOneMoreIs() {
        CreditWindow w = window(8, 8, 4, 0, false);
        assertFalse(w.controlDue(false));
        w.delivered();
        w.released();
        assertTrue(w.controlDue(false));
    }

    @Test
    void aPeerWithoutCreditsGetsAnUpdateEvenForOneCredit() {
        // 1 owed + 7 held = every credit is here: the peer cannot send, so waiting would deadlock.
        CreditWindow w = window(8, 8, 1, 7, false);
        assertTrue(w.controlDue(false));
    }

    @Test
    void controlSentTakesWhatIsOwedAndBlocksTheNextUntilItCompletes() {
        CreditWindow w = window(4, 4, 3, 0, false);
        assertEquals(3, w.controlSent());
        assertEquals(0, w.owed());
        assertTrue(w.controlInFlight());
        w.delivered();
        w.released();
        w.delivered();
        w.released();
        w.delivered();
        w.released();
        assertFalse(w.controlDue(false), "one update in flight at a time");
        w.controlCompleted();
        assertTrue(w.controlDue(false));
    }

    @Test
    void spendingAndGrantingMoveAvailable() {
        CreditWindow w = new CreditWindow(4, 2);
        assertTrue(w.canSpend());
        w.spend();
        w.spend();
        assertFalse(w.canSpend());
        assertThrows(IllegalStateException.class, w::spend);
        w.grant(2);
        assertEquals(2, w.available());
    }

    @Test
    void dataCarriesTheOwedCreditsOnce() {
        CreditWindow w = window(4, 1, 2, 0, false);
        assertEquals(2, w.takeOwed());
        assertEquals(0, w.takeOwed());
    }

    @Test
    void droppedMessagesAreNotOwed() {
        CreditWindow w = window(4, 0, 0, 2, false);
        w.dropped();
        assertEquals(1, w.held());
        assertEquals(0, w.owed());
    }

    @Test
    void releasingOrDroppingMoreThanDeliveredIsADefect() {
        CreditWindow w = new CreditWindow(4, 4);
        assertThrows(IllegalStateException.class, w::released);
        assertThrows(IllegalStateException.class, w::dropped);
    }

    @Test
    void creditsOutOfRangeAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> new CreditWindow(0, 0));
        assertThrows(IllegalArgumentException.class, () -> new CreditWindow(4, -1));
        assertThrows(IllegalArgumentException.class, () -> new CreditWindow(Wire.CREDITS + 1, 0));
        CreditWindow w = new CreditWindow(4, 0);
        assertThrows(IllegalArgumentException.class, () -> w.start(-1));
        assertThrows(IllegalArgumentException.class, () -> w.start(Wire.CREDITS + 1));
    }

    @Test
    void startGrantsThePeersCreditsOnce() {
        CreditWindow w = new CreditWindow(4, 0);
        w.start(3);
        assertEquals(3, w.available());
        assertEquals(3, w.peerGranted());
        assertThrows(IllegalStateException.class, () -> w.start(3));
    }

    @Test
    void aPeerReturningMoreThanWasSpentIsAViolation() {
        CreditWindow w = new CreditWindow(4, 0);
        w.start(8);
        RdmaCmException.ProtocolViolation none = assertThrows(RdmaCmException.ProtocolViolation.class,
                () -> w.grant(1));
        assertEquals(Step.TRANSFER, none.step());
        w.spend();
        w.spend();
        w.spend();
        assertThrows(RdmaCmException.ProtocolViolation.class, () -> w.grant(4));
        assertThrows(RdmaCmException.ProtocolViolation.class, () -> w.grant(-1));
        assertThrows(RdmaCmException.ProtocolViolation.class, () -> w.grant(Wire.CREDITS));
        assertEquals(5, w.available(), "a refused grant changes nothing");
        w.grant(2);
        w.grant(1);
        assertEquals(8, w.available());
        assertThrows(RdmaCmException.ProtocolViolation.class, () -> w.grant(1));
    }

    @Test
    void aDataMessageBeyondTheCreditsGivenIsAViolation() {
        CreditWindow w = new CreditWindow(2, 2);
        assertEquals(2, w.outstanding());
        w.delivered();
        w.delivered();
        assertEquals(0, w.outstanding());
        RdmaCmException.ProtocolViolation v = assertThrows(RdmaCmException.ProtocolViolation.class, w::delivered);
        assertTrue(v.getMessage().contains("without a credit"), v.getMessage());
        assertEquals(2, w.held(), "a refused message is not counted");
        // Released and owed is not given yet: the peer still has no credit.
        w.released();
        assertThrows(RdmaCmException.ProtocolViolation.class, w::delivered);
        // Returned (even if still on its way): one more message may come.
        assertEquals(1, w.takeOwed());
        assertEquals(1, w.outstanding());
        w.delivered();
        assertThrows(RdmaCmException.ProtocolViolation.class, w::delivered);
    }
}
