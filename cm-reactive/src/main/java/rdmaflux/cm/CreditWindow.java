package rdmaflux.cm;

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
 * <p>Not thread-safe: the owner ({@link RcQueue}) guards it with its monitor.
 */
final class CreditWindow {
    private final int granted;
    private int available;
    private int owed;
    private int held;
    private boolean controlInFlight;

    /**
     * A window with nothing owed or held.
     *
     * @param granted the credits this side grants the peer (its data receive buffers)
     * @param initial the credits the peer granted this side (from its hello)
     */
    CreditWindow(int granted, int initial) {
        if (granted <= 0 || initial < 0 || granted > Wire.CREDITS || initial > Wire.CREDITS) {
            throw new IllegalArgumentException("credits out of range: granted " + granted + ", initial " + initial);
        }
        this.granted = granted;
        this.available = initial;
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
     */
    void grant(int n) {
        if (n < 0 || n > Wire.CREDITS) {
            throw new IllegalArgumentException("credits returned: " + n);
        }
        available += n;
    }

    /** A data message that took a peer credit was delivered to the application. */
    void delivered() {
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
                + (controlInFlight ? ", control in flight" : "") + "]";
    }
}
