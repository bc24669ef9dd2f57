package rdmaflux.samples.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/** The cross-host benchmark client's end of the control connection to its server part ({@link CrossHostBench}). */
final class CrossHostControl implements AutoCloseable {
    private final Socket socket;
    private final BufferedReader in;
    private final PrintWriter outLine;

    private CrossHostControl(Socket socket) throws IOException {
        this.socket = socket;
        in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
        outLine = new PrintWriter(socket.getOutputStream(), true, StandardCharsets.UTF_8);
    }

    /** Connects, retrying while the server's JVM is still starting (its VM boots alongside this one). */
    static CrossHostControl connect(InetSocketAddress server, Duration timeout) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
        for (;;) {
            Socket s = new Socket();
            try {
                s.connect(server, (int) timeout.toMillis());
                s.setSoTimeout((int) Duration.ofMinutes(5).toMillis());
                return new CrossHostControl(s);
            } catch (IOException e) {
                s.close();
                if (System.nanoTime() > deadline) {
                    throw new IOException("no bench server at " + server + ": " + e.getMessage(), e);
                }
                Thread.sleep(1000);
            }
        }
    }

    /**
     * Sends a request and waits for its first answer.
     *
     * @param line the request
     * @param awaitReady whether the answer is {@code ready} (else {@code done} or an error)
     * @return the answer
     */
    String request(String line, boolean awaitReady) throws IOException {
        outLine.println(line);
        return awaitReady ? expect("ready") : "";
    }

    /** {@return the next answer, whatever it is} */
    String answer() throws IOException {
        String a = in.readLine();
        if (a == null) {
            throw new IOException("the bench server went away");
        }
        return a;
    }

    /** {@return the next answer}, failing unless it is {@code want} */
    String expect(String want) throws IOException {
        String a = answer();
        if (!a.equals(want)) {
            throw new IllegalStateException("server: " + a);
        }
        return a;
    }

    /** Sends a line without waiting for an answer. */
    void send(String line) {
        outLine.println(line);
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
