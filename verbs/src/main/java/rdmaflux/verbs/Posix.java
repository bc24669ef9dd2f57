package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** The few libc calls the layer needs around rdma-core's file descriptors. */
final class Posix {
    static final short POLLIN = 0x1;
    private static final int F_GETFL = 3;
    private static final int F_SETFL = 4;
    private static final int O_NONBLOCK = 0x800;
    private static final int EFD_NONBLOCK = 0x800;
    private static final int EFD_CLOEXEC = 0x80000;

    private static final Native.Fn POLL = Native.libc("poll",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
    // fcntl is variadic; the third argument must be passed as a variadic int.
    private static final Native.Fn FCNTL = Native.fn("fcntl", Native.LIBC.find("fcntl").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
            Linker.Option.firstVariadicArg(2));
    private static final Native.Fn EVENTFD = Native.libc("eventfd",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final Native.Fn READ = Native.libc("read",
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final Native.Fn WRITE = Native.libc("write",
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final Native.Fn CLOSE = Native.libc("close",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));

    private Posix() {
    }

    static void setNonBlocking(int fd, boolean nonBlocking) {
        int flags = FCNTL.callInt(fd, F_GETFL, 0);
        int wanted = nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK;
        if (wanted != flags) {
            FCNTL.callInt(fd, F_SETFL, wanted);
        }
    }

    /**
     * Waits until one of {@code fds} is readable.
     *
     * @param fds descriptors to watch
     * @param ready filled with whether each became readable (same length as fds)
     * @param timeoutMillis -1 to wait forever
     * @return how many are readable; 0 on timeout
     */
    static int pollIn(int[] fds, boolean[] ready, int timeoutMillis) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pfds = arena.allocate(8L * fds.length, 4);
            for (int i = 0; i < fds.length; i++) {
                pfds.set(ValueLayout.JAVA_INT, 8L * i, fds[i]);
                pfds.set(ValueLayout.JAVA_SHORT, 8L * i + 4, POLLIN);
                pfds.set(ValueLayout.JAVA_SHORT, 8L * i + 6, (short) 0);
            }
            int n;
            for (;;) {
                n = (int) POLL.invoke(pfds, (long) fds.length, timeoutMillis);
                if (n >= 0) {
                    break;
                }
                int errno = Native.lastErrno();
                if (errno != Errno.EINTR) {
                    throw RdmaException.of("poll", errno, null);
                }
            }
            for (int i = 0; i < fds.length; i++) {
                // Any revents (POLLIN, POLLERR, POLLHUP) means the next read will not block.
                ready[i] = pfds.get(ValueLayout.JAVA_SHORT, 8L * i + 6) != 0;
            }
            return n;
        }
    }

    // One pollfd per thread for the single-descriptor wait, so a wait allocates nothing.
    private static final ThreadLocal<MemorySegment> POLLFD =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(8, 8));
    private static final java.lang.invoke.MethodHandle POLL_EXACT = POLL.handle();

    /**
     * Waits until {@code fd} is readable (or has an error or hang-up, after which a read won't block).
     *
     * @param fd the descriptor
     * @param timeoutMillis -1 to wait forever
     * @return whether it is readable; {@code false} on timeout
     */
    static boolean pollIn(int fd, int timeoutMillis) {
        MemorySegment pfd = POLLFD.get();
        pfd.set(ValueLayout.JAVA_INT, 0, fd);
        pfd.set(ValueLayout.JAVA_SHORT, 4, POLLIN);
        pfd.set(ValueLayout.JAVA_SHORT, 6, (short) 0);
        MemorySegment capture = Native.capture();
        for (;;) {
            int n;
            try {
                n = (int) POLL_EXACT.invokeExact(capture, pfd, 1L, timeoutMillis);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException("poll threw " + t, t);
            }
            if (n >= 0) {
                return n > 0;
            }
            int errno = Native.errno(capture);
            if (errno != Errno.EINTR) {
                throw RdmaException.of("poll", errno, null);
            }
        }
    }

    static int eventFd() {
        return EVENTFD.callInt(0, EFD_NONBLOCK | EFD_CLOEXEC);
    }

    static void eventFdSignal(int fd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment one = arena.allocate(ValueLayout.JAVA_LONG);
            one.set(ValueLayout.JAVA_LONG, 0, 1L);
            long n = (long) WRITE.invoke(fd, one, 8L);
            if (n < 0 && Native.lastErrno() != Errno.EAGAIN) {
                throw RdmaException.of("write(eventfd)", Native.lastErrno(), null);
            }
        }
    }

    static void eventFdDrain(int fd) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(ValueLayout.JAVA_LONG);
            READ.invoke(fd, buf, 8L);
        }
    }

    static void close(int fd) {
        CLOSE.callInt(fd);
    }
}
