package rdmaflux.cm.internal.rc;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaCmException;
import rdmaflux.cm.Step;

/**
 * One side's bookkeeping of the {@link ConnectionOptions.Protocol#CREDITS} flow control, free of native
 * code and threads so every rule can be tested on its own.
 *
 * <p>Each side grants the peer {@code granted} credits, one per receive buffer it posts for data. A data
 * SEND (or RDMA WRITE with immediate) takes one of the credits the peer granted ({@link #available()});
 * the peer gets it back when its application releases the message: the credit is then <em>owed</em>
 * ({@link #owed()}) until it travels back in the immediate data of a data SEND (piggybacked,
 * {@link #takeOwed()}) or of a zero-length control message ({@link #controlSent()}). Control messages
 * take no credit; they land in {@link ConnectionOptions#CONTROL_RECEIVE_BUFFERS} extra buffers, so
 * their number must stay bounded: see {@link #controlDue}.
 *
 * <p>Conservation: for one direction, the sender's {@link #available()}, the data messages in flight,
 * the receiver's {@link #held()} and {@link #owed()}, and the credits travelling back always add up to
 * {@code granted}. Property tests (CreditWindowPropertiesTest) check this over random interleavings.
 *
 * <p>The peer is not trusted: it is held to what this side can see of the same rule. It may return at
 * most the credits this side spent and did not get back ({@link #grant}), and may send at most one data
 * message per credit this side ever gave it ({@link #outstanding()}, checked by {@link #delivered()}).
 * A peer breaking either fails with {@link RdmaCmException.ProtocolViolation}. The checks are exact: a
 * peer that keeps to the rule never fails them, whatever the interleaving, and one that breaks it fails
 * the moment this side can tell (a message sent early on a credit already on its way back is
 * indistinguishable from one sent after it arrived).
 *
 * <p>Not thread-safe: the owner ({@link RcQueue}) guards it with its lock ({@link ConnectionLock}).
 */
public final class CreditWindow {
    private final int granted;
    /** The credits the peer granted this side in its hello. */
    private int peerGranted;
    private int available;
    private int owed;
    private int held;
    /** Credits this side gave the peer (in its hello and returned since) that no data message used yet. */
    private int outstanding;
    private boolean controlInFlight;

    /**
     * A window with nothing owed or held.
     *
     * @param granted the credits this side grants the peer (its data receive buffers)
     * @param initial the credits the peer granted this side (from its hello); or 0 and {@link #start} later
     */
    CreditWindow(int granted, int initial) {
        if (granted <= 0 || initial < 0 || granted > Wire.CREDITS || initial > Wire.CREDITS) {
            throw new IllegalArgumentException("credits out of range: granted " + granted + ", initial " + initial);
        }
        this.granted = granted;
        this.peerGranted = initial;
        this.available = initial;
        this.outstanding = granted;
    }

    /**
     * The peer's hello arrived: the credits it grants this side. Called once, before anything is spent.
     *
     * @param peerCredits the credits from the peer's hello (0..65535)
     */
    void start(int peerCredits) {
        if (peerCredits < 0 || peerCredits > Wire.CREDITS) {
            throw new IllegalArgumentException("credits out of range: " + peerCredits);
        }
        if (peerGranted != 0 || available != 0) {
            throw new IllegalStateException("the window was started already: " + this);
        }
        peerGranted = peerCredits;
        available = peerCredits;
    }

    /** {@return the credits this side grants the peer} */
    int granted() {
        return granted;
    }

    /** {@return credits this side may spend on data messages now} */
    int available() {
        return available;
    }

    /** {@return credits released by the application here and not yet returned to the peer} */
    int owed() {
        return owed;
    }

    /** {@return the credits the peer granted this side in its hello} */
    int peerGranted() {
        return peerGranted;
    }

    /**
     * {@return credits this side gave the peer (in its hello or returned since) that no data message has
     * used yet: some may still be on their way back to it}
     */
    int outstanding() {
        return outstanding;
    }

    /** {@return data messages delivered here and not yet released} */
    int held() {
        return held;
    }

    /** {@return whether a control message is posted and its send has not completed} */
    boolean controlInFlight() {
        return controlInFlight;
    }

    /** {@return whether a data message could be sent now} */
    boolean canSpend() {
        return available > 0;
    }

    /** Takes one credit for a data message; the caller checked {@link #canSpend()}. */
    void spend() {
        if (available == 0) {
            throw new IllegalStateException("no credit to spend");
        }
        available--;
    }

    /**
     * The peer returned credits (immediate data of a data or control message).
     *
     * @param n credits returned
     * @throws RdmaCmException.ProtocolViolation when {@code n} is negative or more than this side spent
     *                                           and did not get back: a peer cannot return what it never had
     */
    void grant(int n) {
        if (n < 0 || n > peerGranted - available) {
            throw new RdmaCmException.ProtocolViolation(Step.TRANSFER, "it returned " + n + " credits, but only "
                    + (peerGranted - available) + " of the " + peerGranted + " it granted are spent and not returned");
        }
        available += n;
    }

    /**
     * A data message that took a peer credit arrived: it is held until the application releases it.
     *
     * @throws RdmaCmException.ProtocolViolation when the peer had no credit for it: it sent more data
     *                                           messages than this side ever gave it credits
     */
    void delivered() {
        if (outstanding == 0) {
            throw new RdmaCmException.ProtocolViolation(Step.TRANSFER, "it sent a data message without a credit ("
                    + held + " held, " + owed + " owed of the " + granted + " credits granted)");
        }
        outstanding--;
        held++;
    }

    /** The application released a delivered data message: its buffer is posted again, its credit owed. */
    void released() {
        if (held == 0) {
            throw new IllegalStateException("released more messages than were delivered");
        }
        held--;
        owed++;
    }

    /**
     * A delivered message was given up without its buffer being posted again (the connection is going
     * away): no credit is owed for it.
     */
    void dropped() {
        if (held == 0) {
            throw new IllegalStateException("dropped more messages than were delivered");
        }
        held--;
    }

    /**
     * The owed credits leave with a data message or the close message.
     *
     * @return the credits to put in its immediate data
     */
    int takeOwed() {
        int n = owed;
        owed = 0;
        outstanding += n;
        return n;
    }

    /**
     * Whether to send a credit update now, because no data send will carry the owed credits soon.
     *
     * <p>An update goes out when more than half of the credits granted are owed, or when every credit
     * is here (owed or held by the application) so the peer has none and nothing is in flight. This
     * bounds the updates the peer may not have processed yet, whatever its threads are doing: each
     * carries credits, all of them together at most {@code granted}, so at most one of the first kind
     * fits; one of the second kind is only sent when no update is in flight and leaves room for at most
     * one of the first kind after it. With the orderly close, at most 3 (the control receive buffers).
     * (A quarter-window threshold let 4 and more pile up at a peer whose completion thread lagged, and
     * they hit RNR.)
     *
     * @param dataWaiting whether data sends are queued waiting for resources
     * @return whether the caller should post a control message now and call {@link #controlSent()}
     */
    boolean controlDue(boolean dataWaiting) {
        if (owed == 0 || controlInFlight) {
            return false;
        }
        boolean peerStarved = owed + held >= granted;
        boolean dataWillCarry = dataWaiting && available > 0;
        return (owed > granted / 2 || peerStarved) && !dataWillCarry;
    }

    /**
     * A credit update was posted.
     *
     * @return the credits it carries
     */
    int controlSent() {
        controlInFlight = true;
        return takeOwed();
    }

    /** The credit update's send completed: the next one may go. */
    void controlCompleted() {
        controlInFlight = false;
    }

    @Override
    public String toString() {
        return "CreditWindow[granted=" + granted + ", available=" + available + ", owed=" + owed + ", held=" + held
                + ", outstanding=" + outstanding + (controlInFlight ? ", control in flight" : "") + "]";
    }
}
