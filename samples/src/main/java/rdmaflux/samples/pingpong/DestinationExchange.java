package rdmaflux.samples.pingpong;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The TCP exchange of the libibverbs pingpong examples ({@code pp_client_exch_dest} and
 * {@code pp_server_exch_dest}), byte for byte:
 * <ul>
 *   <li>the client connects and writes its {@code n} 52-byte {@link WireDestination} records;</li>
 *   <li>the server reads them, brings its QPs to RTS ({@code connectServer}), writes its own records;</li>
 *   <li>the client reads them and writes {@code "done"} with its NUL; the server reads it; both close.</li>
 * </ul>
 * The client brings its QPs to RTS after the exchange, as the C client does. Each record goes out in
 * one write: the C side reads a record with a single {@code read()} of 52 bytes. {@code srq_pingpong}
 * always sends and reads {@code MAX_QP} (256) records whatever its {@code -q}, only the first
 * {@code -q} of them meaningful: {@code wireRecords} says how many travel; the extra ones sent are
 * zero, the extra ones read are skipped unparsed.
 */
final class DestinationExchange {
    private static final byte[] DONE = {'d', 'o', 'n', 'e', 0};

    private DestinationExchange() {
    }

    /** What the server does between reading the client's records and writing its own. */
    interface ServerConnect {
        void connect(List<WireDestination> remote);
    }

    /**
     * The server side: listens on {@code port} (all addresses, SO_REUSEADDR), serves one client.
     *
     * @param port TCP port
     * @param mine this side's records
     * @param wireRecords records each side sends, at least {@code mine.size()}
     * @param connectServer brings this side's QPs to RTS towards the client's
     * @param log receives "waiting" and connection lines
     * @return the client's records
     * @throws IOException on a socket error or a short or malformed record
     */
    static List<WireDestination> serve(int port, List<WireDestination> mine, int wireRecords,
            ServerConnect connectServer, java.util.function.Consumer<String> log) throws IOException {
        Socket s;
        try (ServerSocket listener = new ServerSocket()) {
            listener.setReuseAddress(true);
            listener.bind(new InetSocketAddress(port), 1);
            log.accept("waiting for a client on TCP port " + listener.getLocalPort());
            s = listener.accept();
        }
        try (Socket socket = s) {
            DataInputStream in = new DataInputStream(socket.getInputStream());
            List<WireDestination> remote = read(in, mine.size(), wireRecords);
            connectServer.connect(remote);
            write(socket.getOutputStream(), mine, wireRecords);
            byte[] done = new byte[WireDestination.SIZE];
            int n = readSome(in, done);
            if (n != DONE.length) {
                throw new IOException("Couldn't send/recv local address: expected \"done\" from the client, got "
                        + n + " bytes");
            }
            return remote;
        }
    }

    /**
     * The client side: connects (retrying while the server is not yet listening, up to {@code wait}).
     *
     * @param host server host
     * @param port TCP port
     * @param mine this side's records
     * @param wireRecords records each side sends, at least {@code mine.size()}
     * @param wait how long to retry refused connects
     * @return the server's records
     * @throws IOException when the server cannot be reached or sends a short or malformed record
     * @throws InterruptedException when interrupted between retries
     */
    static List<WireDestination> connect(String host, int port, List<WireDestination> mine, int wireRecords,
            Duration wait)
            throws IOException, InterruptedException {
        long deadline = System.nanoTime() + wait.toNanos();
        for (;;) {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress(host, port), 5000);
                write(socket.getOutputStream(), mine, wireRecords);
                List<WireDestination> remote = read(new DataInputStream(socket.getInputStream()), mine.size(),
                        wireRecords);
                socket.getOutputStream().write(DONE);
                socket.getOutputStream().flush();
                return remote;
            } catch (ConnectException e) {
                // The server may still be starting: both sides are often launched together.
                if (System.nanoTime() - deadline > 0) {
                    throw new ConnectException("Couldn't connect to " + host + ":" + port + ": " + e.getMessage());
                }
                Thread.sleep(100);
            }
        }
    }

    private static void write(OutputStream out, List<WireDestination> mine, int wireRecords) throws IOException {
        for (WireDestination d : mine) {
            out.write(d.toWire());
        }
        for (int i = mine.size(); i < wireRecords; i++) {
            out.write(new byte[WireDestination.SIZE]);
        }
        out.flush();
    }

    private static List<WireDestination> read(DataInputStream in, int n, int wireRecords) throws IOException {
        List<WireDestination> out = new ArrayList<>(n);
        byte[] record = new byte[WireDestination.SIZE];
        for (int i = 0; i < wireRecords; i++) {
            try {
                in.readFully(record);
            } catch (java.io.EOFException e) {
                throw new IOException("Couldn't read remote address [" + i + "]: the peer closed the connection"
                        + " (does it use the same number of QPs?)", e);
            }
            if (i < n) {
                out.add(WireDestination.parse(record));
            }
        }
        return out;
    }

    private static int readSome(InputStream in, byte[] buf) throws IOException {
        int n = in.read(buf);
        return Math.max(n, 0);
    }
}
