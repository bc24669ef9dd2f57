package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * The native core's plumbing: errno capture, the two rdma-core error conventions, and errno's names.
 * With {@link Calls}, {@link CmCalls}, {@link ProviderCalls}, {@link LinkedOp} and {@link Posix} it is
 * the only code that links or calls native functions (NativeGateTest checks that); everything else
 * calls through them.
 *
 * <p>jextract's generated handles do not capture errno, and by the time Java code could read errno
 * the JVM may have overwritten it. So every control-path call that reports through errno is re-linked
 * here from the generated address and descriptor with {@code captureCallState("errno")}.
 */
final class Native {
    static final Linker LINKER = Linker.nativeLinker();
    static final SymbolLookup LIBC = LINKER.defaultLookup();

    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");

    // One capture buffer per thread; the auto arena frees it with the thread's last reference.
    private static final ThreadLocal<MemorySegment> CAPTURE =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(CAPTURE_LAYOUT));

    /** glibc's thread-safe {@code strerrorname_np} and {@code strerrordesc_np}, or null where libc lacks them. */
    private static final MethodHandle ERRNO_NAME = libcString("strerrorname_np");
    private static final MethodHandle ERRNO_DESCRIPTION = libcString("strerrordesc_np");

    private Native() {
    }

    /**
     * A native function linked with errno capture, named for error messages.
     *
     * @param name the C function name, used as the exception's operation
     * @param handle downcall handle whose first parameter is the capture segment
     * @param spreader the same handle taking its arguments as one {@code Object[]}: the generic
     *                 {@link #invoke} path, without {@code invokeWithArguments}' per-call type lookups
     */
    record Fn(String name, MethodHandle handle, MethodHandle spreader) {

        /** Calls a function following the "-1 (or any negative) and errno" convention; returns rc. */
        int callInt(Object... args) {
            int rc = (int) invoke(args);
            if (rc < 0) {
                throw RdmaException.of(name, lastErrno(), null);
            }
            return rc;
        }

        /** Calls a function that returns 0 or an errno: positive, or -1 with errno set (both seen in rdma-core). */
        void callStatus(Object... args) {
            int rc = (int) invoke(args);
            if (rc != 0) {
                throw RdmaException.of(name, rc > 0 ? rc : lastErrno(), null);
            }
        }

        /** Calls a function that returns a pointer, NULL and errno on failure. */
        MemorySegment callPointer(Object... args) {
            MemorySegment p = (MemorySegment) invoke(args);
            if (p.equals(MemorySegment.NULL)) {
                int errno = lastErrno();
                // Some providers return NULL without setting errno; ENOMEM is what rdma-core documents then.
                throw RdmaException.of(name, errno == 0 ? Errno.ENOMEM : errno, null);
            }
            return p;
        }

        /** Calls and returns the raw result; errno of the call is then {@link #lastErrno()}. */
        Object invoke(Object... args) {
            MemorySegment capture = CAPTURE.get();
            ERRNO.set(capture, 0L, 0);
            Object[] full = new Object[args.length + 1];
            full[0] = capture;
            System.arraycopy(args, 0, full, 1, args.length);
            try {
                return spreader.invokeExact(full);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(name + " threw " + t, t);
            }
        }
    }

    /** Links {@code name} found at {@code address} with errno capture. */
    static Fn fn(String name, MemorySegment address, FunctionDescriptor descriptor, Linker.Option... extra) {
        Linker.Option[] options = java.util.Arrays.copyOf(extra, extra.length + 1);
        options[extra.length] = CAPTURE_ERRNO;
        MethodHandle handle = LINKER.downcallHandle(address, descriptor, options);
        MethodHandle spreader = handle.asType(handle.type().generic())
                .asSpreader(Object[].class, handle.type().parameterCount());
        return new Fn(name, handle, spreader);
    }

    /** Reads a NUL-terminated C string that rdma-core returned, or {@code null} for NULL. */
    static String string(MemorySegment p) {
        return p.equals(MemorySegment.NULL) ? null : p.reinterpret(4096).getString(0);
    }

    /** Links a libc function with errno capture. */
    static Fn libc(String name, FunctionDescriptor descriptor) {
        MemorySegment address = LIBC.find(name).orElseThrow(() -> new UnsatisfiedLinkError("libc has no " + name));
        return fn(name, address, descriptor);
    }

    /**
     * This thread's errno capture segment, for callers that invoke a {@link Fn#handle()} exactly
     * (typed, without {@link Fn#invoke}'s argument array) on hot control paths.
     */
    static MemorySegment capture() {
        return CAPTURE.get();
    }

    /** The errno a call made with {@code capture} (from {@link #capture()}) left there. */
    static int errno(MemorySegment capture) {
        return (int) ERRNO.get(capture, 0L);
    }

    /** The errno captured by this thread's most recent {@link Fn} call. */
    static int lastErrno() {
        return (int) ERRNO.get(CAPTURE.get(), 0L);
    }

    /** {@return the symbolic name of an errno value ({@code strerrorname_np}), or null where libc has none} */
    static String errnoName(int errno) {
        return callString(ERRNO_NAME, errno);
    }

    /** {@return the description of an errno value ({@code strerrordesc_np}), or null where libc has none} */
    static String errnoDescription(int errno) {
        return callString(ERRNO_DESCRIPTION, errno);
    }

    private static String callString(MethodHandle h, int errno) {
        if (h == null) {
            return null;
        }
        try {
            MemorySegment p = (MemorySegment) h.invokeExact(errno);
            return p.equals(MemorySegment.NULL) ? null : p.reinterpret(256).getString(0);
        } catch (Throwable t) {
            return null;
        }
    }

    private static MethodHandle libcString(String fn) {
        return LIBC.find(fn)
                .map(addr -> LINKER.downcallHandle(addr,
                        FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_INT)))
                .orElse(null);
    }
}
