package rdmaflux.metrics.bench;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaRecorder;
import rdmaflux.cm.RdmaServer;
import rdmaflux.metrics.MicrometerRdmaRecorder;
import rdmaflux.testing.RdmaTestEnv;

/**
 * The per-message cost of a real connection (client and server in this process, on the test RDMA
 * address) with the Micrometer recorder on both ends against the no-op recorder: batches of 4 KiB
 * messages sent, received and released. Needs RDMA: run it in the sandbox (docs/metrics.md).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 20, time = 5) // under the sandbox's emulation C2 needs minutes to settle
@Measurement(iterations = 10, time = 5)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Benchmark)
public class ConnectionBenchmark {
    /** Enough to keep every send buffer and credit busy; small enough for many operations per iteration in the VM. */
    private static final int BATCH = 64;
    private static final Duration T = Duration.ofSeconds(120);

    /** Which recorder both ends use. */
    @Param({"noop", "micrometer"})
    public String recorder;

    /** Message size in bytes. */
    @Param("4096")
    public int size;

    private PrometheusMeterRegistry registry;
    private RdmaServer server;
    private RdmaConnection client;
    private Disposable serverSide;
    private final Semaphore received = new Semaphore(0);
    private ByteBuffer payload;

    /** Connects once per trial. */
    @Setup(Level.Trial)
    public void setup() {
        registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        RdmaRecorder r = recorder.equals("noop") ? RdmaRecorder.NOOP : MicrometerRdmaRecorder.of(registry);
        ConnectionOptions options = ConnectionOptions.builder().recorder(r).build();
        server = RdmaServer.bind(new InetSocketAddress(RdmaTestEnv.address(), 0), options, AcceptFilter.ACCEPT_ALL)
                .block(T);
        serverSide = server.connections().subscribe(c -> c.receive().subscribe(m -> {
            m.release();
            received.release();
        }));
        client = RdmaConnection.connect(server.address(), options).block(T);
        payload = ByteBuffer.allocateDirect(size).asReadOnlyBuffer();
    }

    /** Disconnects. */
    @TearDown(Level.Trial)
    public void tearDown() {
        client.disposeNow(T);
        serverSide.dispose();
        server.disposeNow(T);
        registry.close();
    }

    /**
     * Sends a batch and waits until the server has received (and released) all of it.
     *
     * @throws InterruptedException never in practice
     */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void message() throws InterruptedException {
        client.send(Flux.range(0, BATCH).map(i -> payload.duplicate())).block(T);
        if (!received.tryAcquire(BATCH, T.toSeconds(), TimeUnit.SECONDS)) {
            throw new IllegalStateException("the server did not receive the batch");
        }
    }
}
