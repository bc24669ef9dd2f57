package rdmaflux.cm;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** iproute2's {@code ip} on this host, for the cross-host tests that read or change its neighbour table. */
final class IpCommand {
    private IpCommand() {
    }

    /**
     * Runs {@code ip} with {@code args}.
     *
     * @param args its arguments
     * @return its output (stdout and stderr) and exit status
     * @throws IOException when it could not be started or read
     * @throws InterruptedException when interrupted while waiting
     */
    static Result run(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("ip"));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        // Its output ended, so it has exited or is about to; a status still missing then is a hang.
        int exit = p.waitFor(10, TimeUnit.SECONDS) ? p.exitValue() : -1;
        return new Result(String.join(" ", command), exit, out);
    }

    /**
     * What one {@code ip} run did.
     *
     * @param command the command line
     * @param exit its exit status; -1 if it had not exited 10 s after its output ended
     * @param output what it printed
     */
    record Result(String command, int exit, String output) {
    }
}
