package rdmaflux.samples.pingpong;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * libibverbs' {@code ibv_uc_pingpong} in Java, wire-compatible with it: either side may be the C
 * program. The server is started without a host, the client with the server's host; both print
 * their QP addresses, then the C program's throughput and latency lines.
 *
 * <pre>{@code
 * scripts/sample uc-pingpong -g 1 -n 100 &   scripts/sample uc-pingpong -g 1 -n 100 127.0.0.1
 * }</pre>
 */
@Command(name = "uc-pingpong", mixinStandardHelpOptions = true,
        description = "SEND ping-pong over one UC QP (unreliable connected), exchanging QP addresses over TCP like ibv_uc_pingpong.")
public final class UcPingPong extends PingPongCommand {
    /** Creates the command; picocli sets the options given. */
    public UcPingPong() {
    }

    @Override
    PingPongKind kind() {
        return PingPongKind.UC;
    }

    /**
     * Runs the sample.
     *
     * @param args command line; {@code --help} describes it
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new UcPingPong()).execute(args));
    }
}
