package rdmaflux.verbs;

import java.util.ArrayList;
import java.util.List;

import org.openjdk.jmh.profile.GCProfiler;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs the FFM hot-path microbenchmarks with JMH's GC profiler (its {@code gc.alloc.rate.norm} is the
 * heap allocation per operation). {@link PostPollBenchmark} needs an RDMA device: where there is none it
 * is left out, and the reason is printed.
 *
 * <pre>{@code
 * JmhMain [--quick] [--c1] [--device-only | --no-device] [--include REGEX] [--json FILE]
 * }</pre>
 * {@code --quick} shortens warmup and measurement (for emulated machines); {@code --c1} runs the forks with
 * C1 only ({@code -XX:TieredStopAtLevel=1}, as the integration tests run in the sandbox VM);
 * {@code --include} narrows the run to benchmarks matching a regular expression.
 */
public final class JmhMain {
    private JmhMain() {
    }

    /**
     * @param args see the type's documentation
     * @throws RunnerException when JMH fails
     */
    public static void main(String[] args) throws RunnerException {
        boolean quick = false;
        boolean c1 = false;
        String only = null;
        boolean pure = true;
        boolean device = true;
        String json = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--quick" -> quick = true;
                case "--c1" -> c1 = true;
                case "--include" -> only = args[++i];
                case "--device-only" -> pure = false;
                case "--no-device" -> device = false;
                case "--json" -> json = args[++i];
                default -> throw new IllegalArgumentException("unknown argument " + args[i]
                        + "; use [--quick] [--c1] [--device-only | --no-device] [--include REGEX] [--json FILE]");
            }
        }
        List<String> include = new ArrayList<>();
        if (pure) {
            include.add(SendRequestsBenchmark.class.getName());
            include.add(PostBenchmark.class.getName());
            include.add(WorkCompletionsBenchmark.class.getName());
            include.add(PollerBenchmark.class.getName());
        }
        if (device) {
            if (Rdma.isAvailable()) {
                include.add(PostPollBenchmark.class.getName());
            } else {
                System.out.println("JmhMain: skipping " + PostPollBenchmark.class.getSimpleName()
                        + ": no usable RDMA device here (" + Rdma.unavailabilityCause().getMessage() + ")");
            }
        }
        if (include.isEmpty()) {
            System.out.println("JmhMain: nothing to run");
            return;
        }
        ChainedOptionsBuilder opts = new OptionsBuilder().addProfiler(GCProfiler.class);
        // One pattern: a benchmark of the classes above that also matches --include, if given.
        String classes = String.join("|", include.stream().map(c -> c.replace(".", "\\.")).toList());
        opts.include((only == null ? "^" : "^(?=.*(?:" + only + "))") + "(?:" + classes + ")\\.");
        if (c1) {
            opts.jvmArgsAppend("--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1");
        }
        if (quick) {
            opts.warmupIterations(2).warmupTime(TimeValue.seconds(1)).measurementIterations(3)
                    .measurementTime(TimeValue.seconds(1));
        }
        if (json != null) {
            opts.resultFormat(org.openjdk.jmh.results.format.ResultFormatType.JSON).result(json);
        }
        new Runner(opts.build()).run();
    }
}
