package rdmaflux.cm;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.InvocationInterceptor;
import org.junit.jupiter.api.extension.ReflectiveInvocationContext;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Runs each test method on a thread of its own at the lowest CPU priority (Linux nice 19), for
 * rsocket-java's kit: its {@code StepVerifier.verify} waits by polling a latch in a loop that never sleeps,
 * and under the sandbox's emulated CPUs those polling threads took about half the CPU from the threads
 * that move the frames being verified. At nice 19 a waiting verifier only runs when a CPU has nothing else
 * to do; it still sees every signal, and its timeouts are wall-clock time as before. Threads the test
 * thread starts inherit the priority: {@code requestChannel256}'s pool of 12 verifying threads does.
 * Reactor's parallel workers are started before, at normal priority, because the transport delivers
 * frames on them. Setup and teardown ({@code @BeforeEach}, {@code @AfterEach}) stay on JUnit's thread.
 */
final class LowPriorityTestThread implements InvocationInterceptor {
    private static final int PRIO_PROCESS = 0;
    /** Linux's nice value is per thread, and {@code who == 0} means the calling one. */
    private static final int CALLING_THREAD = 0;
    private static final int LOWEST = 19;
    private static final MethodHandle SETPRIORITY = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("setpriority").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT));

    @Override
    public void interceptTestMethod(Invocation<Void> invocation, ReflectiveInvocationContext<Method> invocationContext,
                                    ExtensionContext extensionContext) throws Throwable {
        startParallelWorkers();
        long wall0 = System.nanoTime();
        long cpu0 = processCpuNanos();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicLong testCpu = new AtomicLong();
        Thread test = new Thread(() -> {
            lowerPriority();
            try {
                invocation.proceed();
            } catch (Throwable t) {
                failure.set(t);
            } finally {
                testCpu.set(ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime());
            }
        }, "low-priority-test");
        test.start();
        try {
            test.join();
        } catch (InterruptedException e) {
            test.interrupt(); // JUnit's own timeout: pass it on
            throw e;
        }
        report(invocationContext.getExecutable().getName() + wrappers(extensionContext), System.nanoTime() - wall0,
                processCpuNanos() - cpu0, testCpu.get(), failure.get() == null);
        if (failure.get() != null) {
            throw failure.get();
        }
    }

    /**
     * One line per test method on standard output, the measurement docs/rsocket.md quotes: wall time, the
     * JVM's CPU time (every thread: transport, RSocket, JIT, GC), the test thread's own (the kit's polling
     * verifier; the threads it started, such as {@code requestChannel256}'s pool, are not in it) and the
     * load average, which says how far the wall time can be believed on the shared machine.
     */
    private static void report(String method, long wallNanos, long cpuNanos, long testThreadCpuNanos, boolean passed) {
        String load;
        try {
            load = Files.readString(Path.of("/proc/loadavg")).trim();
        } catch (IOException | RuntimeException e) {
            load = "?";
        }
        System.out.printf(Locale.ROOT, "[tck] %s %s: wall %.1f s, process CPU %.1f s, test thread CPU %.1f s,"
                + " CPUs %d, loadavg %s%n", method, passed ? "passed" : "FAILED", wallNanos / 1e9, cpuNanos / 1e9,
                testThreadCpuNanos / 1e9, Runtime.getRuntime().availableProcessors(), load);
    }

    /**
     * The kit picks at random, per test, whether each side's connection gets its {@code AsyncDuplexConnection}
     * (received frames hop to another scheduler, twice): a test's numbers are only comparable with the same
     * pick. Read from the kit's private fields, since it reports them only to its logger.
     */
    private static String wrappers(ExtensionContext context) {
        try {
            Object instance = context.getRequiredTestInstance();
            Object pair = instance.getClass().getMethod("getTransportPair").invoke(instance);
            return " [client async=" + flag(pair, "runClientWithAsyncInterceptors") + ", server async="
                    + flag(pair, "runServerWithAsyncInterceptors") + "]";
        } catch (ReflectiveOperationException | RuntimeException e) {
            return "";
        }
    }

    private static boolean flag(Object pair, String name) throws ReflectiveOperationException {
        java.lang.reflect.Field f = pair.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f.getBoolean(pair);
    }

    /** {@return the JVM's CPU time so far (all threads), or -1 where the platform does not tell} */
    private static long processCpuNanos() {
        return ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os
                ? os.getProcessCpuTime() : -1;
    }

    private static void lowerPriority() {
        try {
            int rc = (int) SETPRIORITY.invokeExact(PRIO_PROCESS, CALLING_THREAD, LOWEST);
            if (rc != 0) {
                throw new IllegalStateException("setpriority failed: " + rc);
            }
        } catch (Throwable t) {
            throw new IllegalStateException("cannot lower the test thread's priority", t);
        }
    }

    /**
     * Every worker of Reactor's parallel scheduler runs one task from here, so none is started (and given
     * nice 19) by the test thread.
     */
    private static void startParallelWorkers() throws InterruptedException {
        Scheduler parallel = Schedulers.parallel();
        int n = Schedulers.DEFAULT_POOL_SIZE * 2;
        CountDownLatch ran = new CountDownLatch(n);
        for (int i = 0; i < n; i++) {
            parallel.schedule(ran::countDown);
        }
        if (!ran.await(1, TimeUnit.MINUTES)) {
            throw new IllegalStateException("Reactor's parallel scheduler did not run " + n + " tasks in a minute");
        }
    }
}
