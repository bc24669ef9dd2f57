package rdmaflux.cm;

/**
 * Immutable options of a server's shared receive pool ({@link ServerOptions.Builder#sharedReceivePool}): one
 * shared receive queue (SRQ) per device per server, whose buffers every accepted connection receives
 * into, instead of each connection posting {@link ConnectionOptions#receiveBuffers()} buffers of its own.
 * For servers with many connections, most of them idle: the memory pinned for receiving is
 * {@link #buffers()} times {@link ConnectionOptions#bufferSize()}, whatever the number of connections.
 *
 * <p><b>Credits stay exact</b> (docs/protocol.md): each connection grants its peer {@link #quota()}
 * credits (its hello says so), and the pool keeps that many buffers plus
 * {@link ConnectionOptions#CONTROL_RECEIVE_BUFFERS} for each connection: never lent, so a peer never
 * meets an empty queue (no RNR). The {@link #reserve()} is lent: a connection whose application holds
 * messages returns their credits at once, charged to the reserve, up to {@link #loanCap()} messages at a
 * time; a connection that holds more only returns credits as it releases, which slows its sender, and
 * can never take the others' quota. The pool admits {@code (buffers - reserve) / (quota + 3)}
 * connections; a connect request beyond that fails to be accepted.
 *
 * <p>Start from {@link #of(int, int)}; {@link #withReserve(int, int)} sets the reserve.
 */
public final class SharedReceivePool {
    private final int buffers;
    private final int quota;
    private final int reserve;
    private final int loanCap;

    private SharedReceivePool(int buffers, int quota, int reserve, int loanCap) {
        if (quota < 1 || quota > 0x7FFF) {
            throw new IllegalArgumentException("quota must be 1..32767 credits per connection, got " + quota);
        }
        if (reserve < 0 || loanCap < 0 || loanCap > reserve) {
            throw new IllegalArgumentException("the reserve must be >= 0 and the loan cap 0..reserve, got reserve "
                    + reserve + ", loan cap " + loanCap);
        }
        long least = (long) reserve + quota + ConnectionOptions.CONTROL_RECEIVE_BUFFERS;
        if (buffers < least) {
            throw new IllegalArgumentException("a pool of " + buffers + " buffers holds no connection: it needs at "
                    + "least reserve + quota + " + ConnectionOptions.CONTROL_RECEIVE_BUFFERS + " control = " + least);
        }
        this.buffers = buffers;
        this.quota = quota;
        this.reserve = reserve;
        this.loanCap = loanCap;
    }

    /**
     * A pool without a reserve: each connection has {@code quota} credits.
     *
     * @param buffers the receive buffers of the pool, per device (at most the device's {@code max_srq_wr},
     *                checked when the pool is made)
     * @param quota the credits each connection grants its peer (1..32767)
     * @return the options
     * @throws IllegalArgumentException when a value is out of range, or the pool holds no connection
     */
    public static SharedReceivePool of(int buffers, int quota) {
        return new SharedReceivePool(buffers, quota, 0, 0);
    }

    /**
     * Sets the reserve lent to busy connections.
     *
     * @param reserve the buffers lent (part of {@link #buffers()})
     * @param loanCap the most one connection may have lent at once (0..{@code reserve})
     * @return options with that reserve
     * @throws IllegalArgumentException when a value is out of range, or the pool then holds no connection
     */
    public SharedReceivePool withReserve(int reserve, int loanCap) {
        return new SharedReceivePool(buffers, quota, reserve, loanCap);
    }

    /** {@return the receive buffers of the pool, per device} */
    public int buffers() {
        return buffers;
    }

    /** {@return the credits each connection grants its peer, never lent} */
    public int quota() {
        return quota;
    }

    /** {@return the buffers lent to busy connections} */
    public int reserve() {
        return reserve;
    }

    /** {@return the most buffers one connection may have lent at once} */
    public int loanCap() {
        return loanCap;
    }

    /** {@return how many connections the pool holds at once} */
    public int capacity() {
        return (buffers - reserve) / (quota + ConnectionOptions.CONTROL_RECEIVE_BUFFERS);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SharedReceivePool p && p.buffers == buffers && p.quota == quota && p.reserve == reserve
                && p.loanCap == loanCap;
    }

    @Override
    public int hashCode() {
        return ((buffers * 31 + quota) * 31 + reserve) * 31 + loanCap;
    }

    @Override
    public String toString() {
        return "SharedReceivePool[buffers=" + buffers + ", quota=" + quota + ", reserve=" + reserve + ", loanCap="
                + loanCap + "]";
    }
}
