package rdmaflux.cm.internal.loop;

import rdmaflux.cm.internal.loop.EventLoop;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Test fixture: a non-blocking eventfd made with libc directly, a descriptor an {@link EventLoop} can
 * watch without an RDMA device.
 */
final class TestEventFd implements AutoCloseable {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle EVENTFD = handle("eventfd",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final MethodHandle READ = handle("read",
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final MethodHandle WRITE = handle("write",
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final MethodHandle CLOSE = handle("close",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    /** EFD_NONBLOCK | EFD_CLOEXEC. */
    private static final int FLAGS = 04000 | 02000000;

    /** The descriptor, alone in an array as {@link EventLoop#fds()} returns it. */
    final int[] fds;
    private final MemorySegment word = Arena.global().allocate(ValueLayout.JAVA_LONG);
    private boolean closed;

    TestEventFd() {
        try {
            int fd = (int) EVENTFD.invokeExact(0, FLAGS);
            if (fd < 0) {
                throw new IllegalStateException("eventfd failed");
            }
            fds = new int[] {fd};
        } catch (Throwable e) {
            throw new IllegalStateException(e);
        }
    }

    private static MethodHandle handle(String name, FunctionDescriptor type) {
        return LINKER.downcallHandle(LINKER.defaultLookup().find(name).orElseThrow(), type);
    }

    /** Makes the descriptor readable; any thread. */
    synchronized void signal() {
        word.set(ValueLayout.JAVA_LONG, 0, 1);
        try {
            long n = (long) WRITE.invokeExact(fds[0], word, 8L);
            if (n != 8) {
                throw new IllegalStateException("eventfd write returned " + n);
            }
        } catch (Throwable e) {
            throw new IllegalStateException(e);
        }
    }

    /** Reads the count, making the descriptor quiet again. */
    synchronized void drain() {
        try {
            long n = (long) READ.invokeExact(fds[0], word, 8L);
        } catch (Throwable e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            try {
                int r = (int) CLOSE.invokeExact(fds[0]);
            } catch (Throwable e) {
                throw new IllegalStateException(e);
            }
        }
    }
}
