package rdmaflux.cm;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import rdmaflux.cm.internal.leak.LeakTracker;

/**
 * Fails a test class in which a received message leaked: the integration tests run at
 * {@link RdmaLeakDetection.Level#PARANOID} ({@code scripts/it}), and this extension, registered for all of them
 * by the launcher's extension autodetection, collects garbage after each class and fails it on any report
 * (printed by the detector with its sites). A test that leaks on purpose {@linkplain #expect says so} first.
 *
 * <p>Threads: JUnit's; the listener on the detector's thread.
 */
public final class LeakCheck implements BeforeAllCallback, AfterAllCallback {
    private static final List<RdmaLeak> LEAKS = new CopyOnWriteArrayList<>();
    private static final AtomicInteger EXPECTED = new AtomicInteger();

    static {
        RdmaLeakDetection.onLeak(LEAKS::add);
    }

    /**
     * A test is about to leak {@code n} messages on purpose: the class does not fail for them.
     *
     * @param n how many
     */
    static void expect(int n) {
        EXPECTED.addAndGet(n);
    }

    private static long trackedBefore;

    @Override
    public void beforeAll(ExtensionContext context) {
        LEAKS.clear();
        EXPECTED.set(0);
        trackedBefore = LeakTracker.trackedSinceStart();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (RdmaLeakDetection.level() == RdmaLeakDetection.Level.OFF) {
            return;
        }
        if (LeakTracker.tracked() > 0) {
            // Only a tracked message not yet released can be a leak: without one, no collection is needed.
            LeakTracker.collect();
        }
        int unexpected = LEAKS.size() - EXPECTED.get();
        // What shows in the run's log that the detector was on: how many messages it watched, how many leaked.
        System.out.println("leak-check: " + context.getRequiredTestClass().getSimpleName() + ": "
                + (LeakTracker.trackedSinceStart() - trackedBefore) + " messages tracked at "
                + RdmaLeakDetection.level() + ", " + LEAKS.size() + " leaked (" + EXPECTED.get() + " on purpose), "
                + LeakTracker.tracked() + " still held" + (LeakTracker.tracked() == 0 ? ""
                : "; the first of them: " + LeakTracker.unreleased().stream().findFirst().orElse("-")));
        if (unexpected > 0) {
            throw new AssertionError(unexpected + " received message(s) leaked in "
                    + context.getRequiredTestClass().getSimpleName() + " (" + LEAKS.size() + " reported, "
                    + EXPECTED.get() + " on purpose); the first: " + LEAKS.getFirst());
        }
    }
}
