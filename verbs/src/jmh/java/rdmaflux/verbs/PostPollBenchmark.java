package rdmaflux.verbs;

import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import rdmaflux.testing.RcPair;

/**
 * post_send/poll_cq round trips on a real device: two connected RC QPs of one context (the verbs
 * integration tests' {@link RcPair}). Measures the whole path, Java and provider and device: on
 * Soft-RoCE the kernel's rxe work dominates, so compare these with the C tools, not with the pure
 * Java benchmarks. {@link JmhMain} runs it only where {@link Rdma#isAvailable()}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class PostPollBenchmark {
    private static final int SIGNALED = SendFlag.mask(SendFlag.SIGNALED);

    private RcPair pair;
    private SendRequests write;
    private SendRequests send;
    private SendRequests read;
    private ReceiveRequests recv;
    private WorkCompletions wc;

    /** Connects the pair and fills the work requests once. */
    @Setup(Level.Trial)
    public void setup() {
        if (!Rdma.isAvailable()) {
            throw new IllegalStateException("PostPollBenchmark needs an RDMA device: "
                    + Rdma.unavailabilityCause().getMessage());
        }
        pair = RcPair.open();
        RemoteBuffer remote = pair.b.mr.toRemoteBuffer();
        write = new SendRequests(1, 1);
        write.set(0, 1, SendOpcode.RDMA_WRITE, SIGNALED).sge(0, 0, pair.a.mr, 0, 8).rdma(0, remote.address(),
                remote.rkey());
        read = new SendRequests(1, 1);
        read.set(0, 3, SendOpcode.RDMA_READ, SIGNALED).sge(0, 0, pair.a.mr, 64, 8).rdma(0, remote.address(),
                remote.rkey());
        send = new SendRequests(1, 1);
        send.set(0, 2, SendOpcode.SEND, SIGNALED).sge(0, 0, pair.a.mr, 0, 8);
        recv = new ReceiveRequests(1, 1);
        recv.set(0, 4).sge(0, 0, pair.b.mr, 0, 64);
        wc = new WorkCompletions(4);
    }

    /** Frees the pair. */
    @TearDown(Level.Trial)
    public void tearDown() {
        pair.close();
    }

    private long awaitOne(CompletionQueue cq) {
        while (cq.poll(wc) == 0) {
            Thread.onSpinWait();
        }
        if (!wc.isSuccess(0)) {
            throw new IllegalStateException(wc.describe(0));
        }
        return wc.wrId(0);
    }

    /**
     * One signaled 8-byte RDMA WRITE, polled to completion.
     *
     * @return the completion's id
     */
    @Benchmark
    public long rdmaWrite() {
        pair.a.qp.postSend(write, 1);
        return awaitOne(pair.a.cq);
    }

    /**
     * One 8-byte RDMA READ, polled to completion.
     *
     * @return the completion's id
     */
    @Benchmark
    public long rdmaRead() {
        pair.a.qp.postSend(read, 1);
        return awaitOne(pair.a.cq);
    }

    /**
     * Post a receive on one QP, an 8-byte SEND on the other, poll both completions.
     *
     * @return the sum of the completion ids
     */
    @Benchmark
    public long sendReceive() {
        pair.b.qp.postReceive(recv, 1);
        pair.a.qp.postSend(send, 1);
        return awaitOne(pair.a.cq) + awaitOne(pair.b.cq);
    }
}
