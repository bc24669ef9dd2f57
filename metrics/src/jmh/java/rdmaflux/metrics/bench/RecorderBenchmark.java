package rdmaflux.metrics.bench;

import java.util.concurrent.TimeUnit;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
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
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import rdmaflux.cm.RdmaRecorder;
import rdmaflux.metrics.MicrometerRdmaRecorder;

/**
 * What the recorder costs per message, without RDMA: the exact calls cm-reactive makes for one message
 * that is sent, completes, is received and whose buffer is posted again (sender and receiver side),
 * against {@link RdmaRecorder#NOOP}. Runs anywhere; compare with {@link ConnectionBenchmark}'s
 * per-message time to get the relative overhead.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 10, time = 1) // C2 takes long under the sandbox's emulation
@Measurement(iterations = 10, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Benchmark)
public class RecorderBenchmark {
    /** Which recorder. */
    @Param({"noop", "micrometer"})
    public String recorder;

    private RdmaRecorder r;
    private PrometheusMeterRegistry registry;
    private int i;

    /** Builds the recorder; the Prometheus registry is the one applications scrape. */
    @Setup
    public void setup() {
        registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        r = recorder.equals("noop") ? RdmaRecorder.NOOP : MicrometerRdmaRecorder.of(registry);
    }

    /** Closes the registry. */
    @TearDown
    public void tearDown() {
        registry.close();
    }

    /** One message, both ends: post, poll, send completion, receive completion, repost. */
    @Benchmark
    public void perMessage() {
        int n = i++;
        r.outstanding(1);
        r.pollBatch(1 + (n & 7));
        r.outstanding(-1);
        r.messageSent(4096);
        r.operationLatency("send", 2_000 + (n & 1023));
        r.pollBatch(1 + (n & 3));
        r.outstanding(-1);
        r.messageReceived(4096);
        r.outstanding(1);
    }
}
