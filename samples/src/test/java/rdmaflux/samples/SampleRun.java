package rdmaflux.samples;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import picocli.CommandLine;

/**
 * A sample's command line executed in the test's JVM on a thread of its own (a JVM per sample would
 * cost tens of seconds under the sandbox's emulation), stdout and stderr kept apart.
 */
public final class SampleRun implements AutoCloseable {
    private final String name;
    private final List<String> args;
    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();
    private final CompletableFuture<Integer> exit = new CompletableFuture<>();

    private SampleRun(String name, List<String> args) {
        this.name = name;
        this.args = args;
    }

    /**
     * Starts a sample.
     *
     * @param command the picocli command object, e.g. {@code new RcPingPong()}
     * @param args its arguments
     * @return the running sample
     */
    public static SampleRun start(Object command, String... args) {
        CommandLine cl = new CommandLine(command);
        SampleRun run = new SampleRun(cl.getCommandName(), List.of(args));
        cl.setOut(new PrintWriter(run.out, true)).setErr(new PrintWriter(run.err, true));
        Thread.ofPlatform().daemon().name(run.name).start(() -> {
            try {
                run.exit.complete(cl.execute(args));
            } catch (Throwable t) {
                run.exit.completeExceptionally(t);
            }
        });
        return run;
    }

    /**
     * Waits for the exit.
     *
     * @param timeout the longest wait
     * @return the exit status
     */
    public int awaitExit(Duration timeout) throws InterruptedException, ExecutionException {
        try {
            return exit.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError("still running after " + timeout + ": " + describe());
        }
    }

    /** {@return stdout so far} */
    public String stdout() {
        synchronized (out) {
            return out.toString();
        }
    }

    /** {@return stderr so far} */
    public String stderr() {
        synchronized (err) {
            return err.toString();
        }
    }

    /** {@return the command line, the exit status once known and the output, for assertion messages} */
    public String describe() {
        return name + " " + String.join(" ", args) + (exit.isDone() ? " (exit " + exit.getNow(null) + ")" : "")
                + "\n--- stdout\n" + stdout() + "--- stderr\n" + stderr();
    }

    /** Prints the output for the test log; the sample ends by itself within its own timeout. */
    @Override
    public void close() {
        System.out.println(describe());
    }
}
