package rdmaflux.verbs;

import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The whole Java side of one post or poll, as the bandwidth loops of the benchmark do it per message:
 * fill the request, post it (checks, chain, work leases and their record, FFM downcall), or poll an empty
 * CQ. Runs against a {@link FakeProvider} whose provider functions return at once, so it needs no device and
 * what it measures is what rdmaflux adds to a C program's {@code ibv_post_send} / {@code ibv_poll_cq}. The
 * completions a real poll would return (one per signaled send, one per receive) are handed to the CQ as a
 * poll hands them, so the cost of retiring the recorded requests is in the rows too.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class PostBenchmark {
    private static final int SIGNALED = SendFlag.mask(SendFlag.SIGNALED);
    private static final int CQ_MOD = 100;

    private FakeProvider fake;
    private SendRequests send;
    private ReceiveRequests recv;
    private WorkCompletions wc;
    private final long remote = 0x7f00_8000_2000L;
    private long posted;

    /** Builds the fake device objects and the batches, as the benchmark's VerbsLink does. */
    @Setup
    public void setup() {
        fake = new FakeProvider(1, 1);
        send = new SendRequests(1, 1);
        recv = new ReceiveRequests(1, 1);
        recv.set(0, -1).sge(0, 0, fake.mr, 0, 4096);
        wc = new WorkCompletions(64);
    }

    /**
     * One message of the RDMA WRITE stream: fill id, opcode, flags (one in {@value #CQ_MOD} signaled), the
     * SGE and the remote target, then post it.
     *
     * @return the id, so nothing is dead code
     */
    @Benchmark
    public long writeFillAndPost() {
        long id = posted++;
        send.set(0, id, SendOpcode.RDMA_WRITE, (id + 1) % CQ_MOD == 0 ? SIGNALED : 0).sge(0, 0, fake.mr, 0, 2)
                .rdma(0, remote, 0x5678);
        fake.qp.postSend(send, 1);
        retire(id, WcOpcode.RDMA_WRITE);
        return id;
    }

    /**
     * The same RDMA WRITE through the extended post API: {@code ibv_wr_start}, id, flags,
     * {@code ibv_wr_rdma_write}, {@code ibv_wr_set_sge}, {@code ibv_wr_complete} (five downcalls against
     * the classic path's one).
     *
     * @return the id
     */
    @Benchmark
    public long writeExtendedFillAndPost() {
        long id = posted++;
        ExtendedSendQueue sq = fake.extended;
        sq.start();
        sq.wrId(id).flags((id + 1) % CQ_MOD == 0 ? SIGNALED : 0).rdmaWrite(0x5678, remote).sge(fake.mr, 0, 2);
        sq.complete();
        retire(id, WcOpcode.RDMA_WRITE);
        return id;
    }

    /**
     * One message of the SEND stream: fill and post.
     *
     * @return the id
     */
    @Benchmark
    public long sendFillAndPost() {
        long id = posted++;
        send.set(0, id, SendOpcode.SEND, (id + 1) % CQ_MOD == 0 ? SIGNALED : 0).sge(0, 0, fake.mr, 0, 2);
        fake.qp.postSend(send, 1);
        retire(id, WcOpcode.SEND);
        return id;
    }

    /**
     * The same SEND through the extended post API: {@code ibv_wr_start}, id, flags, {@code ibv_wr_send},
     * {@code ibv_wr_set_sge}, {@code ibv_wr_complete}, as the benchmark's {@code ibv_wr_*} SEND stream
     * posts each message.
     *
     * @return the id
     */
    @Benchmark
    public long sendExtendedFillAndPost() {
        long id = posted++;
        ExtendedSendQueue sq = fake.extended;
        sq.start();
        sq.wrId(id).flags((id + 1) % CQ_MOD == 0 ? SIGNALED : 0).send().sge(fake.mr, 0, 2);
        sq.complete();
        retire(id, WcOpcode.SEND);
        return id;
    }

    /**
     * Reposting one receive filled once, as the SEND stream's receiver does per message.
     *
     * @return the batch, so nothing is dead code
     */
    @Benchmark
    public ReceiveRequests repostReceive() {
        fake.qp.postReceive(recv, 1);
        fake.complete(-1, WcOpcode.RECV);
        return recv;
    }

    /** The completion of a signaled send, as a poll would return it: retires it and the unsignaled before it. */
    private void retire(long id, WcOpcode opcode) {
        if ((id + 1) % CQ_MOD == 0) {
            fake.complete(id, opcode);
        }
    }

    /**
     * A poll that finds nothing: what the stream's sender does while its send queue is full.
     *
     * @return the count (0)
     */
    @Benchmark
    public int pollEmpty() {
        return fake.cq.poll(wc);
    }
}
