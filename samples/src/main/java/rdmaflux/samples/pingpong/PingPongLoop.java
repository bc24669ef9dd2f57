package rdmaflux.samples.pingpong;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.Locale;

import rdmaflux.verbs.CompletionQueue;
import rdmaflux.verbs.WorkCompletions;

/**
 * The completion loop of the libibverbs pingpong examples, for one QP or many sharing a receive queue
 * ({@code srq_pingpong.c}'s form, which is {@code rc_pingpong.c}'s for one QP): the client starts
 * with one SEND per QP; each QP sends again once both its last SEND and a receive have completed;
 * receives are topped up to {@code rxDepth} when at most {@code numQp} remain. Both sides stop after
 * {@code iters} SEND and {@code iters} receive completions in all, and print the C programs' two lines.
 * Runs on the command's thread; polls, or sleeps on the completion channel with {@code -e}.
 */
final class PingPongLoop {
    private final PingPongSession s;
    private final int iters;
    private final Duration wait;
    private final WorkCompletions wc;
    private final int[] pending;
    private int routs;
    private int rcnt;
    private int scnt;

    PingPongLoop(PingPongSession session, int iters, Duration wait) {
        this.s = session;
        this.iters = iters;
        this.wait = wait;
        this.wc = new WorkCompletions(session.rxDepth + session.qps.size());
        this.pending = new int[session.qps.size()];
    }

    /** Posts the first {@code rxDepth} receives and arms the CQ for {@code -e}; before the exchange, as in C. */
    void prepare() {
        routs = s.postReceives(s.rxDepth);
        if (s.channel != null) {
            s.cq.requestNotification(false);
        }
    }

    /**
     * Runs the exchange to the end and prints the throughput and latency lines.
     *
     * @param client whether this side sends first
     * @param out where the result lines go
     * @throws PingPongException on a failed completion, a completion for an unknown QP or work request,
     *     or no completion within the wait
     */
    void run(boolean client, PrintWriter out) {
        for (int i = 0; i < pending.length; i++) {
            pending[i] = PingPongSession.RECV_WRID;
            if (client) {
                s.postSend(i);
                pending[i] |= PingPongSession.SEND_WRID;
            }
        }
        long start = System.nanoTime();
        while (rcnt < iters || scnt < iters) {
            if (s.channel != null) {
                CompletionQueue q = s.channel.awaitEvent(wait);
                if (q == null) {
                    throw stalled();
                }
                if (q != s.cq) {
                    throw new PingPongException("CQ event for unknown CQ " + q);
                }
                s.cq.requestNotification(false);
            }
            int ne = s.cq.poll(wc);
            if (s.channel == null) {
                long deadline = System.nanoTime() + wait.toNanos();
                while (ne < 1) {
                    if (System.nanoTime() - deadline > 0) {
                        throw stalled();
                    }
                    ne = s.cq.poll(wc);
                }
            }
            for (int i = 0; i < ne; i++) {
                complete(i);
            }
        }
        long usec = Math.max(1, (System.nanoTime() - start) / 1000);
        long bytes = (long) s.size * iters * 2;
        out.println(String.format(Locale.ROOT, "%d bytes in %.2f seconds = %.2f Mbit/sec", bytes, usec / 1e6,
                bytes * 8.0 / usec));
        out.println(String.format(Locale.ROOT, "%d iters in %.2f seconds = %.2f usec/iter", iters, usec / 1e6,
                (double) usec / iters));
        out.flush();
    }

    private void complete(int i) {
        int wrId = (int) wc.wrId(i);
        if (!wc.isSuccess(i)) {
            throw new PingPongException(String.format("Failed status %s (%d) for wr_id %d",
                    wc.status(i).nativeName(), wc.status(i).value(), wrId));
        }
        int qp = s.indexOf(wc.qpNumber(i));
        if (qp < 0) {
            throw new PingPongException(String.format("Couldn't find QPN %06x", wc.qpNumber(i)));
        }
        switch (wrId) {
            case PingPongSession.SEND_WRID -> ++scnt;
            case PingPongSession.RECV_WRID -> {
                if (--routs <= pending.length) {
                    routs += s.postReceives(s.rxDepth - routs);
                }
                ++rcnt;
            }
            default -> throw new PingPongException("Completion for unknown wr_id " + wrId);
        }
        pending[qp] &= ~wrId;
        if (scnt < iters && pending[qp] == 0) {
            s.postSend(qp);
            pending[qp] = PingPongSession.RECV_WRID | PingPongSession.SEND_WRID;
        }
    }

    private PingPongException stalled() {
        return new PingPongException("no completion within " + wait.toSeconds() + " s after " + scnt + " sends and "
                + rcnt + " receives of " + iters + " (is the peer still running?)");
    }
}
