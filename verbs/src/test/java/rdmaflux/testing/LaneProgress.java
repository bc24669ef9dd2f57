package rdmaflux.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.TestPlan;

/**
 * Reports an integration-test lane's progress while it runs, so that a lane killed by its time limit
 * can still say which test classes finished (and how long each took) and which one was running: the
 * launcher writes its JUnit XML only at the end, and a killed JVM writes none.
 *
 * <p>Active only when {@code RDMAFLUX_IT_PROGRESS} names a file (scripts/it sets it); otherwise, as in
 * the Surefire runs that also find it through the service file, it does nothing. Each event is one
 * tab-separated line appended to that file (opened and closed per line, so the host sees it at once
 * through the sandbox's share) and one {@code it-progress:} line on stdout:
 * {@code start CLASS EPOCH_MS}, {@code test CLASS#METHOD EPOCH_MS}, and
 * {@code done CLASS SECONDS TESTS FAILED SKIPPED}. scripts/lib/it-report reads the file.
 *
 * <p>Threads: the launcher calls it from the threads that run tests; the counters are concurrent.
 */
public final class LaneProgress implements TestExecutionListener {
    private final Path file;
    private final Map<String, long[]> classes = new ConcurrentHashMap<>();   // start ms, tests, failed, skipped
    private volatile TestPlan plan;

    /** Created by the launcher through the service file. */
    public LaneProgress() {
        String name = System.getenv("RDMAFLUX_IT_PROGRESS");
        file = name == null || name.isBlank() ? null : Path.of(name);
    }

    @Override
    public void testPlanExecutionStarted(TestPlan testPlan) {
        plan = testPlan;
    }

    @Override
    public void executionStarted(TestIdentifier id) {
        if (file == null) {
            return;
        }
        long now = System.currentTimeMillis();
        if (isTopLevelClass(id)) {
            classes.put(id.getUniqueId(), new long[] {now, 0, 0, 0});
            emit("start\t" + className(id) + "\t" + now);
        } else if (id.isTest()) {
            topLevelClass(id).ifPresent(c -> emit("test\t" + className(c) + "#" + id.getDisplayName() + "\t" + now));
        }
    }

    @Override
    public void executionSkipped(TestIdentifier id, String reason) {
        if (file != null && id.isTest()) {
            topLevelClass(id).map(c -> classes.get(c.getUniqueId())).ifPresent(counts -> counts[3]++);
        }
    }

    @Override
    public void executionFinished(TestIdentifier id, TestExecutionResult result) {
        if (file == null) {
            return;
        }
        boolean failed = result.getStatus() != TestExecutionResult.Status.SUCCESSFUL;
        if (id.isTest()) {
            topLevelClass(id).map(c -> classes.get(c.getUniqueId())).ifPresent(counts -> {
                counts[1]++;
                if (failed) {
                    counts[2]++;
                }
            });
        }
        if (isTopLevelClass(id)) {
            long[] counts = classes.remove(id.getUniqueId());
            if (counts == null) {
                return;
            }
            // A class whose set-up failed ran no test, yet it failed.
            long failures = counts[2] == 0 && failed ? 1 : counts[2];
            double seconds = (System.currentTimeMillis() - counts[0]) / 1000.0;
            emit(String.format(Locale.ROOT, "done\t%s\t%.1f\t%d\t%d\t%d",
                    className(id), seconds, counts[1], failures, counts[3]));
        }
    }

    private boolean isTopLevelClass(TestIdentifier id) {
        TestPlan p = plan;
        return p != null && isClass(id) && p.getParent(id).map(parent -> !isClass(parent)).orElse(true);
    }

    private Optional<TestIdentifier> topLevelClass(TestIdentifier id) {
        TestPlan p = plan;
        Optional<TestIdentifier> at = Optional.of(id);
        while (p != null && at.isPresent()) {
            if (isTopLevelClass(at.get())) {
                return at;
            }
            at = p.getParent(at.get());
        }
        return Optional.empty();
    }

    private static boolean isClass(TestIdentifier id) {
        return id.getSource().filter(ClassSource.class::isInstance).isPresent();
    }

    private static String className(TestIdentifier id) {
        return id.getSource().map(s -> ((ClassSource) s).getClassName()).orElse(id.getDisplayName());
    }

    private synchronized void emit(String line) {
        System.out.println("it-progress: " + line.replace('\t', ' '));
        try {
            Files.writeString(file, line + "\n", StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the lane's progress to " + file, e);
        }
    }
}
