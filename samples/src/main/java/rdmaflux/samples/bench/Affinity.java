package rdmaflux.samples.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Pins the calling thread to one CPU with Linux's {@code sched_setaffinity} (through the FFM API).
 *
 * <p>Why: in a ping-pong both sides spin. If the scheduler happens to put both spinning threads on one
 * CPU, each hop waits for the other thread's time slice, which on an emulated machine is a timer tick or
 * two, and the measurement says more about placement than about the code. The benchmark therefore pins
 * its client to CPU 0 and its server to CPU 1, and runs the C tools' client and server under
 * {@code taskset} the same way.
 */
final class Affinity {
    private static final int MASK_BYTES = 128; // cpu_set_t: 1024 CPUs
    private static final MethodHandle SET = Linker.nativeLinker().defaultLookup().find("sched_setaffinity")
            .map(f -> Linker.nativeLinker().downcallHandle(f, FunctionDescriptor.of(ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS)))
            .orElse(null);

    private Affinity() {
    }

    /** {@return whether there are two CPUs to spread client and server over, and a way to pin} */
    static boolean available() {
        return SET != null && Runtime.getRuntime().availableProcessors() >= 2;
    }

    /**
     * Restricts the calling thread to one CPU.
     *
     * @param cpu the CPU number
     * @return whether the kernel accepted it
     */
    static boolean pin(int cpu) {
        return set(Optional.of(cpu));
    }

    /** Lets the calling thread run on every CPU again. */
    static void unpin() {
        set(Optional.empty());
    }

    /** Runs {@code work} with the calling thread on CPU 0 (the C sender's CPU) when pinning. */
    static <T> T pinned(boolean pin, Supplier<T> work) {
        if (pin) {
            pin(0);
        }
        try {
            return work.get();
        } finally {
            if (pin) {
                unpin();
            }
        }
    }

    private static boolean set(Optional<Integer> cpu) {
        if (SET == null) {
            return false;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(MASK_BYTES, 8);
            if (cpu.isPresent()) {
                int c = cpu.get();
                mask.set(ValueLayout.JAVA_LONG, 8L * (c / 64), 1L << (c % 64));
            } else {
                mask.fill((byte) 0xff);
            }
            return (int) SET.invokeExact(0, (long) MASK_BYTES, mask) == 0; // pid 0: the calling thread
        } catch (Throwable e) {
            return false;
        }
    }
}
