package rdmaflux.cm.internal.rc;

import rdmaflux.cm.ConnectionOptions;

/**
 * The arithmetic of a receive pool shared by many connections (one SRQ), free of native code so every
 * rule can be tested on its own: which connections fit, and when a connection may return a credit
 * before its application released the message (a <em>loan</em> from the shared reserve).
 *
 * <p>The pool has {@code buffers} receive buffers. Each member connection has a <em>quota</em> of
 * {@code quota} credits, the credits its hello grants the peer and all its {@link CreditWindow} ever
 * grants, plus {@code control} buffers for the peer's control messages
 * ({@link ConnectionOptions#CONTROL_RECEIVE_BUFFERS}); both are reserved when it joins and never lent.
 * The remaining {@code reserve} buffers are lent: when a data message arrives and the member has lent
 * less than {@code loanCap} and the reserve is not used up, the message's buffer is charged to the
 * reserve and its credit is returned to the peer at once, as if released. When the application releases
 * a lent message its buffer goes back to the SRQ and the loan is repaid; its credit is not granted again
 * (it was already). So a fast consumer's sender sees up to {@code quota + loanCap} messages worth of
 * credits per round trip, and a slow consumer holds at most {@code quota + loanCap} buffers: then its
 * credits come back only as it releases, which slows its sender, while every other member keeps its
 * own quota.
 *
 * <p>Why no receiver-not-ready: a peer may have in flight at most the credits it holds, which its
 * window keeps at or below {@code quota} minus the messages held here unlent and minus the credits
 * owed, plus at most {@code control} control messages. With {@code joined} members, the buffers posted
 * are {@code buffers} minus those held by applications (unlent: within their quota; lent: within the
 * reserve), so posted &ge; &Sigma;(quota + control) over members &minus; &Sigma; unlent held &ge; what
 * the peers may send. {@link #posted()} and the property test (SharedCreditsPropertiesTest) check it.
 *
 * <p>A member that leaves still counts until its application released every buffer it holds: a new
 * member must not be promised buffers that are still lent out to an old one.
 *
 * <p>Thread-safe (its methods synchronize on it): members are guarded by their own connection locks,
 * not by one another's.
 */
public final class SharedCredits {
    private final int buffers;
    private final int quota;
    private final int control;
    private final int reserve;
    private final int loanCap;
    /** Members that joined and still count: live, or left with buffers still held. */
    private int members;
    /** Buffers of the pool not in the SRQ: delivered and not yet released, on any member. */
    private int taken;
    /** Buffers lent from the reserve, over all members. */
    private int lent;

    /** One connection's share of the pool; guarded by the pool. */
    static final class Member {
        /** Buffers of this member out of the SRQ (a message landed and is not reposted yet). */
        private int held;
        /** Of {@link #held}, the buffers charged to the reserve. */
        private int lent;
        private boolean left;
        private boolean gone;

        /** {@return buffers of this member out of the SRQ} */
        synchronized int held() {
            return held;
        }

        /** {@return of those, the buffers lent from the reserve} */
        synchronized int lent() {
            return lent;
        }
    }

    /**
     * A pool; checks that at least one member fits.
     *
     * @param buffers the receive buffers posted on the SRQ
     * @param quota the credits each member grants its peer (never lent)
     * @param control the buffers each member keeps for its peer's control messages
     * @param reserve the buffers lent to busy members
     * @param loanCap the most one member may have lent at once
     * @throws IllegalArgumentException when a value is out of range or not even one member fits
     */
    SharedCredits(int buffers, int quota, int control, int reserve, int loanCap) {
        if (quota <= 0 || quota > Wire.CREDITS || control < 0 || reserve < 0 || loanCap < 0 || loanCap > reserve
                || buffers < (long) reserve + quota + control) {
            throw new IllegalArgumentException("shared receive pool out of range: " + buffers + " buffers, quota "
                    + quota + " + " + control + " control per connection, reserve " + reserve + ", loan cap " + loanCap
                    + " (needs buffers >= reserve + quota + control, 0 <= loan cap <= reserve)");
        }
        this.buffers = buffers;
        this.quota = quota;
        this.control = control;
        this.reserve = reserve;
        this.loanCap = loanCap;
    }

    /** {@return how many connections fit at most} */
    int capacity() {
        return (buffers - reserve) / (quota + control);
    }

    /** {@return the credits each member grants its peer} */
    int quota() {
        return quota;
    }

    /** {@return the buffers in the SRQ now, if every buffer released was reposted} */
    synchronized int posted() {
        return buffers - taken;
    }

    /** {@return the members that count: live, or left with buffers still held} */
    synchronized int members() {
        return members;
    }

    /** {@return the buffers lent from the reserve, over all members} */
    synchronized int lent() {
        return lent;
    }

    /**
     * A connection joins, if its quota and control buffers are free.
     *
     * @return its share, or {@code null} when the pool is full
     */
    synchronized Member join() {
        if (members >= capacity()) {
            return null;
        }
        members++;
        return new Member();
    }

    /**
     * A message (data or control) landed in one of the pool's buffers on {@code m}'s connection: the
     * buffer left the SRQ.
     *
     * @param m the member
     */
    synchronized void landed(Member m) {
        if (taken == buffers) {
            throw new IllegalStateException("more buffers landed than were posted");
        }
        synchronized (m) {
            m.held++;
        }
        taken++;
    }

    /**
     * A data message that landed on {@code m} is held by the application: whether its buffer may be
     * charged to the reserve, so that its credit is returned now. Never for a member that left.
     *
     * @param m the member
     * @return whether the loan was made (the caller returns the credit, as for a release)
     */
    synchronized boolean lend(Member m) {
        synchronized (m) {
            if (m.left || m.lent >= loanCap || lent >= reserve || m.lent >= m.held) {
                return false;
            }
            m.lent++;
        }
        lent++;
        return true;
    }

    /**
     * A buffer of {@code m} goes back to the SRQ (its message was released, or was a control message).
     *
     * @param m the member
     * @param wasLent whether the buffer was charged to the reserve ({@link #lend})
     */
    synchronized void reposted(Member m, boolean wasLent) {
        synchronized (m) {
            if (m.held == 0 || (wasLent && m.lent == 0) || (!wasLent && m.held == m.lent)) {
                throw new IllegalStateException("reposted a buffer the member does not hold (lent " + wasLent + ", "
                        + m.held + " held, " + m.lent + " lent)");
            }
            m.held--;
            if (wasLent) {
                m.lent--;
            }
        }
        taken--;
        if (wasLent) {
            lent--;
        }
        settle(m);
    }

    /**
     * {@code m}'s connection ended: nothing lands for it any more. It still counts until every buffer
     * it holds was reposted. Idempotent.
     *
     * @param m the member
     */
    synchronized void leave(Member m) {
        synchronized (m) {
            m.left = true;
        }
        settle(m);
    }

    private void settle(Member m) {
        synchronized (m) {
            if (m.left && m.held == 0 && !m.gone) {
                m.gone = true;
                members--;
            }
        }
    }

    @Override
    public synchronized String toString() {
        return "SharedCredits[buffers=" + buffers + ", quota=" + quota + "+" + control + ", reserve=" + reserve
                + ", loanCap=" + loanCap + ", members=" + members + ", taken=" + taken + ", lent=" + lent + "]";
    }
}
