package rdmaflux.cm;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

import reactor.core.scheduler.Scheduler;

/**
 * The loops' part of the API's access point to its implementation ({@link Implementation} has the rest):
 * {@link RdmaLoops}' factories and the options' default scheduler, apart so that the options, which need
 * the scheduler, do not depend on the factories of what they configure.
 *
 * <p>Threads: any; the handles are immutable.
 */
final class LoopsImplementation {
    private static final String ENTRY = "rdmaflux.cm.internal.Entry";

    private static final MethodHandle SHARED_LOOPS;
    private static final MethodHandle CREATE_LOOPS;
    private static final MethodHandle DEFAULT_SCHEDULER;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            Class<?> entry = Class.forName(ENTRY, true, LoopsImplementation.class.getClassLoader());
            SHARED_LOOPS = lookup.findStatic(entry, "sharedLoops", MethodType.methodType(RdmaLoops.class));
            CREATE_LOOPS = lookup.findStatic(entry, "createLoops",
                    MethodType.methodType(RdmaLoops.class, String.class, int.class));
            DEFAULT_SCHEDULER = lookup.findStatic(entry, "defaultScheduler",
                    MethodType.methodType(Scheduler.class, RdmaLoops.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private LoopsImplementation() {
    }

    static RdmaLoops sharedLoops() {
        try {
            return (RdmaLoops) SHARED_LOOPS.invokeExact();
        } catch (Throwable t) {
            throw unchecked(t);
        }
    }

    static RdmaLoops createLoops(String prefix, int completionLoops) {
        try {
            return (RdmaLoops) CREATE_LOOPS.invokeExact(prefix, completionLoops);
        } catch (Throwable t) {
            throw unchecked(t);
        }
    }

    static Scheduler defaultScheduler(RdmaLoops loops) {
        try {
            return (Scheduler) DEFAULT_SCHEDULER.invokeExact(loops);
        } catch (Throwable t) {
            throw unchecked(t);
        }
    }

    /**
     * The entry points (this class's and {@link Implementation}'s) throw unchecked exceptions only; anything
     * else is a bug here. It lives here, not in {@code Implementation}, so that the options, which reach this
     * class for their default scheduler, do not depend on the factories of what they configure.
     */
    static RuntimeException unchecked(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException(t);
    }
}
