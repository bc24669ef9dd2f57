package rdmaflux.samples.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The benchmark's handle on a {@link SetupServer} JVM: starts it with this JVM's own {@code java}, class
 * path and options, on CPU 1 where the C tools' servers run ({@code taskset}, when pinning), and speaks its
 * line protocol. One server serves a whole row, warm-up rounds included, so its JIT warms up with the
 * client's.
 *
 * <p>Threads: the benchmark's thread calls it; a daemon thread reads the server's output.
 */
final class SetupServerProcess implements AutoCloseable {
    private final Process process;
    private final Writer commands;
    private final BlockingQueue<String> replies = new LinkedBlockingQueue<>();
    private final Duration timeout;
    private final InetSocketAddress address;

    /**
     * Starts the server and waits until it is bound.
     *
     * @param ip the RDMA interface's address
     * @param connections how many connections its accept queue holds
     * @param timeout the longest wait for any reply (closing N connections included)
     * @param quiet the longest wait for its JIT to be idle ({@link #quiet})
     * @param pin run it on CPU 1 ({@code taskset}), as the C tools' servers
     */
    SetupServerProcess(InetAddress ip, int connections, Duration timeout, Duration quiet, boolean pin) {
        this(ip, connections, timeout, quiet, pin, false);
    }

    /**
     * Starts the server and waits until it is bound.
     *
     * @param ip the RDMA interface's address
     * @param connections how many connections its accept queue (and, pooled, its pool) holds
     * @param timeout the longest wait for any reply (closing N connections included)
     * @param quiet the longest wait for its JIT to be idle ({@link #quiet})
     * @param pin run it on CPU 1 ({@code taskset}), as the C tools' servers
     * @param pooled the scale row's server: a shared receive pool, and an echo on every connection
     */
    SetupServerProcess(InetAddress ip, int connections, Duration timeout, Duration quiet, boolean pin,
                       boolean pooled) {
        this.timeout = timeout;
        List<String> args = new java.util.ArrayList<>(List.of(ip.getHostAddress(), Integer.toString(connections),
                Long.toString(timeout.toSeconds()), Long.toString(quiet.toSeconds())));
        if (pooled) {
            args.add("pool");
        }
        List<String> command = ForkedJvm.command(pin ? 1 : -1, SetupServer.class, args);
        try {
            process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the setup server JVM", e);
        }
        commands = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        Thread.ofPlatform().daemon().name("bench-setup-server").start(this::read);
        try {
            address = new InetSocketAddress(ip, Integer.parseInt(await("port")));
        } catch (RuntimeException e) {
            process.destroyForcibly(); // a server that never said it is bound is not waited for
            throw e;
        }
    }

    private void read() {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (line.startsWith(SetupServer.REPLY)) {
                    replies.add(line.substring(SetupServer.REPLY.length()));
                } else {
                    System.out.println("bench:   setup server: " + line);
                }
            }
        } catch (IOException e) {
            // the process ended; await reports it
        }
    }

    /** {@return the server's address} */
    InetSocketAddress address() {
        return address;
    }

    /** Waits until the server's JIT is idle. */
    void quiet() {
        call("quiet", "ok");
    }

    /** Starts a measurement: the server's CPU and step totals count from now. */
    void mark() {
        call("mark", "ok");
    }

    /**
     * The server's side of a run.
     *
     * @param jitSeconds its compiler threads' CPU time since {@link #mark}
     * @param profile its CPU per thread group and its step totals since then
     */
    record Report(double jitSeconds, String profile) {
    }

    /** {@return the server's side since {@link #mark}} */
    Report report() {
        String r = call("report", "report");
        int space = r.indexOf(' ');
        return new Report(Double.parseDouble(r.substring(0, space)), r.substring(space + 1));
    }

    /**
     * What the server holds, after a collection.
     *
     * @param pinnedBytes the bytes of the memory regions its process registered, from the kernel's list
     * @param heapBytes the bytes of its live heap
     * @param directBytes the off-heap memory its JVM reserved: direct buffers and native memory segments
     */
    record Memory(long pinnedBytes, long heapBytes, long directBytes) {
    }

    /** {@return what the server holds now} */
    Memory memory() {
        String[] r = call("memory", "memory").split(" ");
        return new Memory(Long.parseLong(r[0]), Long.parseLong(r[1]), Long.parseLong(r[2]));
    }

    /** Closes every connection the server accepted and waits until they are gone. */
    void closeAccepted() {
        call("close", "closed");
    }

    private String call(String command, String expect) {
        try {
            commands.write(command + "\n");
            commands.flush();
        } catch (IOException e) {
            throw new UncheckedIOException("the setup server JVM is gone (" + command + ")", e);
        }
        return await(expect);
    }

    /** {@return the rest of the next reply, which must start with {@code expect}} */
    private String await(String expect) {
        String reply;
        try {
            reply = replies.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for the setup server", e);
        }
        if (reply == null) {
            throw new IllegalStateException("the setup server JVM did not answer within " + timeout
                    + (process.isAlive() ? "" : "; it exited with " + process.exitValue()));
        }
        if (!reply.equals(expect) && !reply.startsWith(expect + " ")) {
            throw new IllegalStateException("the setup server JVM answered '" + reply + "', not " + expect);
        }
        return reply.substring(expect.length()).strip();
    }

    /** Ends the server: its input ends, it closes and exits; after {@code timeout} it is killed. */
    @Override
    public void close() {
        try {
            commands.close();
        } catch (IOException e) {
            // already gone
        }
        try {
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
    }
}
