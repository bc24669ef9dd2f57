package rdmaflux.samples.bench;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

/**
 * The command line of a JVM the benchmark starts for a side or a row of its own: this JVM's {@code java},
 * options and class path, another main class.
 *
 * <p>Threads: any; it keeps no state.
 */
final class ForkedJvm {
    private ForkedJvm() {
    }

    /**
     * @param cpu the CPU to run it on ({@code taskset}), or -1 for any
     * @param main the class whose {@code main} runs
     * @param args its arguments
     * @return the command
     */
    static List<String> command(int cpu, Class<?> main, List<String> args) {
        List<String> command = new ArrayList<>();
        if (cpu >= 0) {
            command.addAll(List.of("taskset", "-c", Integer.toString(cpu)));
        }
        command.add(ProcessHandle.current().info().command().orElse("java"));
        for (String option : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            // A recording or a log file of the benchmark's own would be written by both JVMs at once.
            if (!option.startsWith("-XX:StartFlightRecording") && !option.startsWith("-Xlog")) {
                command.add(option);
            }
        }
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(args);
        return command;
    }
}
