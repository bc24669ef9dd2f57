package rdmaflux.samples.pingpong;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * libibverbs' {@code ibv_srq_pingpong} in Java, wire-compatible with it: {@code -q} RC QPs (default
 * 16) whose receives all come from one shared receive queue; the two sides pair their QPs in order.
 * As the C program, each side sends 256 address records (its {@code MAX_QP}), the first {@code -q}
 * of them real, so both sides must be given the same {@code -q}. {@code -n} counts the exchanges of all QPs together, as
 * the C program's loop does.
 */
@Command(name = "srq-pingpong", mixinStandardHelpOptions = true,
        description = "SEND ping-pong over several RC QPs sharing one SRQ, like ibv_srq_pingpong.")
public final class SrqPingPong extends PingPongCommand {
    /** Creates the command; picocli sets the options given. */
    public SrqPingPong() {
    }

    /** The C program's limit: its arrays hold 256 QPs and it refuses {@code -q 256}. */
    private static final int MAX_QP = 256;

    @Option(names = {"-q", "--num-qp"}, description = "Number of QPs to use (default ${DEFAULT-VALUE}).")
    int numQp = 16;

    @Override
    PingPongKind kind() {
        return PingPongKind.SRQ;
    }

    @Override
    int numQp() {
        if (numQp < 1 || numQp >= MAX_QP) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "num_qp " + numQp + " must be 1.." + (MAX_QP - 1));
        }
        return numQp;
    }

    @Override
    int wireRecords() {
        return MAX_QP;
    }

    /**
     * Runs the sample.
     *
     * @param args command line; {@code --help} describes it
     */
    public static void main(String[] args) {
        System.exit(new CommandLine(new SrqPingPong()).execute(args));
    }
}
