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
import org.openjdk.jmh.infra.Blackhole;

import rdmaflux.verbs.ffi.ibv_wc;

/**
 * Decoding work completions: reading the fields of {@code struct ibv_wc} straight from native memory.
 * The array is filled with synthetic completions as a provider's poll_cq would, so no device is needed.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class WorkCompletionsBenchmark {
    /** Completions decoded per operation (one poll's worth). */
    @Param({"1", "16"})
    public int count;

    private WorkCompletions wc;

    /** Writes 16 successful receive completions with immediate data, then sets the batch's count. */
    @Setup
    public void setup() {
        wc = new WorkCompletions(16);
        MemorySegment array = wc.segment();
        for (int i = 0; i < 16; i++) {
            MemorySegment one = ibv_wc.asSlice(array, i);
            ibv_wc.wr_id(one, 1000L + i);
            ibv_wc.status(one, 0);
            ibv_wc.opcode(one, WcOpcode.RECV_RDMA_WITH_IMM.value());
            ibv_wc.byte_len(one, 64 * i);
            ibv_wc.imm_data(one, Integer.reverseBytes(i));
            ibv_wc.qp_num(one, 17);
            ibv_wc.wc_flags(one, 2);
        }
        wc.setCount(16);
    }

    /**
     * Reads what a completion handler needs from each: id, status, opcode, length, immediate, QP.
     *
     * @param bh sink for the values
     */
    @Benchmark
    public void decode(Blackhole bh) {
        for (int i = 0; i < count; i++) {
            bh.consume(wc.wrId(i));
            bh.consume(wc.isSuccess(i));
            bh.consume(wc.opcode(i));
            bh.consume(wc.byteLength(i));
            bh.consume(wc.hasImmediate(i) ? wc.immediateData(i) : 0);
            bh.consume(wc.qpNumber(i));
        }
    }

    /**
     * The cheapest useful handler: sum of ids and lengths, status checked (no Blackhole per field).
     *
     * @return the sum
     */
    @Benchmark
    public long sumIdsAndLengths() {
        long sum = 0;
        for (int i = 0; i < count; i++) {
            if (wc.isSuccess(i)) {
                sum += wc.wrId(i) + wc.byteLength(i);
            }
        }
        return sum;
    }
}
