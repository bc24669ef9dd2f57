package rdmaflux.verbs;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Filling and chaining send work requests: what every post costs on the Java side before the provider
 * is called. Needs no device (the addresses and keys are never dereferenced).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class SendRequestsBenchmark {
    private static final int FLAGS = SendFlag.mask(SendFlag.SIGNALED);

    /** Requests filled and chained per operation. */
    @Param({"1", "16"})
    public int chain;

    private SendRequests batch;
    private final long local = 0x7f00_0000_1000L;
    private final long remote = 0x7f00_8000_2000L;

    /** Allocates the batch once, as an application would. */
    @Setup
    public void setup() {
        batch = new SendRequests(16, 2);
    }

    /**
     * Fills {@code chain} RDMA WRITE requests (id, opcode, flags, one SGE, remote address and key) and links
     * them, exactly what {@link QueuePair#postSend} does before calling the provider.
     *
     * @return the chain's head, so the work is not dead code
     */
    @Benchmark
    public MemorySegment fillAndChainWrites() {
        for (int i = 0; i < chain; i++) {
            batch.set(i, i, SendOpcode.RDMA_WRITE, FLAGS).sge(i, 0, local + 64L * i, 64, 0x1234)
                    .rdma(i, remote + 64L * i, 0x5678);
        }
        return batch.chain(chain, 2);
    }

    /**
     * Fills {@code chain} SEND_WITH_IMM requests of two SGEs each (header + payload) and links them.
     *
     * @return the chain's head
     */
    @Benchmark
    public MemorySegment fillAndChainSendsWithImmediate() {
        for (int i = 0; i < chain; i++) {
            batch.set(i, i, SendOpcode.SEND_WITH_IMM, FLAGS).immediate(i, i)
                    .sge(i, 0, local, 16, 0x1234).sge(i, 1, local + 4096L * i, 1024, 0x1234);
        }
        return batch.chain(chain, 2);
    }
}
