package rdmaflux.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Compiles and runs a throw-away C program with the host's {@code gcc}, so tests can ask the
 * installed headers (rather than a hand-copied number) what a size, offset or constant is.
 *
 * <p>A missing or failing compiler is an {@link AssertionError}, never a skipped test: a check
 * against the headers that silently does not run is worse than none, and every build machine of
 * this project has gcc and the rdma-core development headers.
 *
 * <pre>{@code
 * List<String> out = CProgram.of("""
 *         #include <stdio.h>
 *         #include "rdmaflux.h"
 *         int main(void) { printf("%zu\\n", sizeof(struct ibv_wc)); return 0; }
 *         """)
 *     .includeDir(CProgram.rdmafluxHeader().getParent())
 *     .run();
 * }</pre>
 */
public final class CProgram {
    private static final String HEADER = "verbs/jextract/rdmaflux.h";
    private static final long TIMEOUT_SECONDS = 120;

    private final String source;
    private final List<Path> includeDirs = new ArrayList<>();
    private final List<String> libraries = new ArrayList<>();

    private CProgram(String source) {
        this.source = source;
    }

    /**
     * Starts a program from its complete C source, including {@code main}.
     *
     * @param source the text of {@code prog.c}
     * @return a program to configure and {@link #run()}
     */
    public static CProgram of(String source) {
        return new CProgram(source);
    }

    /**
     * Adds a directory searched for {@code #include} files ({@code gcc -I}).
     *
     * @param dir the directory
     * @return this program
     */
    public CProgram includeDir(Path dir) {
        includeDirs.add(dir.toAbsolutePath());
        return this;
    }

    /**
     * Links a library ({@code gcc -l}), e.g. {@code "ibverbs"} or {@code "rdmacm"}.
     *
     * @param name the library name without {@code lib} prefix and suffix
     * @return this program
     */
    public CProgram library(String name) {
        libraries.add(name);
        return this;
    }

    /**
     * Compiles the program with {@code gcc -O0} in a fresh temporary directory and runs it.
     *
     * <p>The directory is deleted on success and kept on failure, so the generated source can be
     * inspected; its path is in the error message.
     *
     * @return the program's standard output, one element per line
     * @throws AssertionError if gcc is missing, compilation fails (the message carries gcc's
     *     diagnostics), or the program exits non-zero or hangs
     */
    public List<String> run() {
        String compiler = gccExecutable();
        Path dir;
        try {
            dir = Files.createTempDirectory("rdmaflux-cprogram");
            Files.writeString(dir.resolve("prog.c"), source, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> gcc = new ArrayList<>(List.of(compiler, "-O0", "-o", "prog"));
        includeDirs.forEach(d -> gcc.add("-I" + d));
        gcc.add("prog.c");
        // Libraries after the source: the linker resolves left to right.
        libraries.forEach(l -> gcc.add("-l" + l));

        Result compiled = exec(gcc, dir);
        if (compiled.exitCode != 0) {
            throw new AssertionError("gcc failed (exit " + compiled.exitCode + ") on " + dir.resolve("prog.c")
                    + ":\n" + compiled.stderr + compiled.stdout);
        }
        Result ran = exec(List.of(dir.resolve("prog").toString()), dir);
        if (ran.exitCode != 0) {
            throw new AssertionError("C program " + dir.resolve("prog") + " exited with " + ran.exitCode
                    + ":\n" + ran.stderr);
        }
        deleteRecursively(dir);
        return ran.stdout.lines().toList();
    }

    /**
     * Finds the jextract wrapper header {@code verbs/jextract/rdmaflux.h}, the exact set of
     * headers the generated bindings were made from, by walking up from the working directory
     * (Maven runs each module's tests inside that module).
     *
     * @return the absolute path of {@code rdmaflux.h}
     * @throws AssertionError if no parent of the working directory contains it
     */
    public static Path rdmafluxHeader() {
        Path start = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        for (Path dir = start; dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve(HEADER);
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
        }
        throw new AssertionError(HEADER + " not found in " + start + " or any parent directory");
    }

    private static String gccExecutable() {
        String path = System.getenv("PATH");
        if (path != null) {
            for (String entry : path.split(java.io.File.pathSeparator)) {
                Path gcc = Path.of(entry.isEmpty() ? "." : entry, "gcc");
                if (Files.isExecutable(gcc)) {
                    return gcc.toString();
                }
            }
        }
        throw new AssertionError("gcc not found on PATH (" + path + "): this test compiles C against the "
                + "installed rdma-core headers; install gcc and the rdma-core development headers "
                + "(e.g. apt-get install gcc libibverbs-dev librdmacm-dev)");
    }

    private record Result(int exitCode, String stdout, String stderr) {}

    private static Result exec(List<String> command, Path dir) {
        Path out = dir.resolve(".stdout");
        Path err = dir.resolve(".stderr");
        try {
            // Files instead of pipes: nothing to drain concurrently, so a chatty gcc cannot block.
            Process p = new ProcessBuilder(command)
                    .directory(dir.toFile())
                    .redirectOutput(out.toFile())
                    .redirectError(err.toFile())
                    .start();
            if (!p.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError(String.join(" ", command) + " did not finish within "
                        + TIMEOUT_SECONDS + " s (in " + dir + ")");
            }
            return new Result(p.exitValue(), Files.readString(out), Files.readString(err));
        } catch (IOException e) {
            throw new AssertionError("cannot run " + String.join(" ", command) + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while running " + String.join(" ", command), e);
        }
    }

    private static void deleteRecursively(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // A leftover temp directory is harmless; failing a passing test over it is not.
        }
    }
}
