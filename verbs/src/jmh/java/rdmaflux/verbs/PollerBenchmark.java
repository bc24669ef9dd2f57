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
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What an event loop's wake-up costs on the Java side, on plain eventfds (no device): a {@link Poller}
 * wait that finds a descriptor readable, a wake-up with the wait it ends, and the eventfd signal and
 * drain under both. Each is a real system call or two, so the time is mostly the kernel's; the point is
 * {@code gc.alloc.rate.norm}, the heap bytes per wake-up.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class PollerBenchmark {
    private Poller poller;
    private int readable;
    private int quiet;
    private int[] fds;
    private int[] quietOnly;
    private boolean[] ready;

    /** A poller and two eventfds, the first signalled once and never drained, so it stays readable. */
    @Setup
    public void setup() {
        poller = new Poller();
        readable = Posix.eventFd();
        quiet = Posix.eventFd();
        Posix.eventFdSignal(readable);
        fds = new int[] {quiet, readable};
        quietOnly = new int[] {quiet};
        ready = new boolean[2];
    }

    /** Closes what {@link #setup()} opened. */
    @TearDown
    public void tearDown() {
        poller.close();
        Posix.close(readable);
        Posix.close(quiet);
    }

    /**
     * A completion loop's wait when a channel has events: {@code poll(2)} on two descriptors and the
     * wakeup eventfd, one readable.
     *
     * @return whether the readable one was reported
     */
    @Benchmark
    public boolean awaitReady() {
        return poller.await(fds, ready, -1) && ready[1];
    }

    /**
     * Another thread's {@link Poller#wakeup()} (here the same thread's) and the wait it ends, which drains
     * the wakeup eventfd: a task handed to a loop. The wait watches only the quiet descriptor, so it returns
     * for the wake-up.
     *
     * @return whether the wait returned for the wake-up
     */
    @Benchmark
    public boolean wakeupAndAwait() {
        poller.wakeup();
        return poller.await(quietOnly, ready, -1);
    }

    /**
     * The eventfd calls alone: {@code write} of 1, {@code read} of the counter.
     *
     * @return the descriptor, so the calls are not dead code
     */
    @Benchmark
    public int eventFdSignalAndDrain() {
        Posix.eventFdSignal(quiet);
        Posix.eventFdDrain(quiet);
        return quiet;
    }
}
