package rdmaflux.samples.pingpong;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * libibverbs' {@code ibv_ud_pingpong} in Java, wire-compatible with it: datagrams of at most the
 * port's active MTU (default 1024 bytes) through an address handle, qkey 0x11111111, each receive
 * 40 bytes longer for the GRH. On RoCE both sides need {@code -g}.
 */
@Command(name = "ud-pingpong", mixinStandardHelpOptions = true,
        description = "SEND ping-pong over one UD QP, exchanging QP addresses over TCP like ibv_ud_pingpong.")
public final class UdPingPong extends PingPongCommand {
    /** Creates the command; picocli sets the options given. */
    public UdPingPong() {
    }

    @Override
    PingPongKind kind() {
        return PingPongKind.UD;
    }

    @Override
    int defaultSize() {
        return 1024;
    }

    /**
     * Runs the sample.
     *
     * @param args command line; {@code --help} describes it
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new UdPingPong()).execute(args));
    }
}
