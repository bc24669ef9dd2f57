package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/** The few libc calls the layer needs around rdma-core's file descriptors. */
final class Posix {
    static final short POLLIN = 0x1;
    private static final int F_GETFL = 3;
    private static final int F_SETFL = 4;
    private static final int O_NONBLOCK = 0x800;
    private static final int EFD_NONBLOCK = 0x800;
    private static final int EFD_CLOEXEC = 0x80000;

    private static final FunctionDescriptor POLL_TYPE =
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT);
    private static final FunctionDescriptor READ_WRITE_TYPE =
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG);
    private static final Native.Fn POLL = Native.libc("poll", POLL_TYPE);
    // fcntl is variadic; the third argument must be passed as a variadic int.
    private static final Native.Fn FCNTL = Native.fn("fcntl", Native.LIBC.find("fcntl").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
            Linker.Option.firstVariadicArg(2));
    private static final Native.Fn EVENTFD = Native.libc("eventfd",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final Native.Fn WRITE = Native.libc("write", READ_WRITE_TYPE);
    private static final Native.Fn CLOSE = Native.libc("close",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final Native.Fn DUP2 = Native.libc("dup2",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    /** {@code RLIMIT_MEMLOCK} in Linux's generic resource numbering, which x86-64 and AArch64 both use. */
    private static final int RLIMIT_MEMLOCK = 8;
    private static final Native.Fn GETRLIMIT = Native.libc("getrlimit",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS));

    private Posix() {
    }

    /** libc's {@code name} linked without errno capture. */
    private static MethodHandle plain(String name, FunctionDescriptor type) {
        return Native.LINKER.downcallHandle(
                Native.LIBC.find(name).orElseThrow(() -> new UnsatisfiedLinkError("libc has no " + name)), type);
    }

    static void setNonBlocking(int fd, boolean nonBlocking) {
        int flags = FCNTL.callInt(fd, F_GETFL, 0);
        int wanted = nonBlocking ? flags | O_NONBLOCK : flags & ~O_NONBLOCK;
        if (wanted != flags) {
            FCNTL.callInt(fd, F_SETFL, wanted);
        }
    }

    /** Bytes per {@code struct pollfd}: int fd, short events, short revents. */
    static final long POLLFD_SIZE = 8;
    private static final long REVENTS = 6;

    private static final MethodHandle POLL_EXACT = POLL.handle();
    private static final MethodHandle WRITE_EXACT = WRITE.handle();
    /*
     * The same functions without errno capture, for the calls of every loop turn. A capturing downcall
     * makes a slice of the capture segment per call, which only C2's escape analysis removes: 40 heap
     * bytes per call with C1 (the sandbox's integration tests). These fail rarely and harmlessly to
     * repeat, so they run uncaptured and a failure is repeated with capture to learn its errno.
     */
    private static final MethodHandle POLL_PLAIN = plain("poll", POLL_TYPE);
    private static final MethodHandle READ_PLAIN = plain("read", READ_WRITE_TYPE);
    private static final MethodHandle WRITE_PLAIN = plain("write", READ_WRITE_TYPE);
    /**
     * One pollfd and one 8-byte read buffer per thread, for the single-descriptor wait and the eventfd
     * drain, so they allocate nothing; the auto arena frees them with the thread's last reference.
     */
    private record Scratch(MemorySegment pollFd, MemorySegment counter) {
        Scratch(MemorySegment all) {
            this(all.asSlice(0, POLLFD_SIZE), all.asSlice(POLLFD_SIZE, 8));
        }
    }

    private static final ThreadLocal<Scratch> SCRATCH =
            ThreadLocal.withInitial(() -> new Scratch(Arena.ofAuto().allocate(POLLFD_SIZE + 8, 8)));
    // What an eventfd signal writes. Only ever read after this initialisation, so all threads share it.
    private static final MemorySegment ONE = Arena.global().allocate(ValueLayout.JAVA_LONG);

    static {
        ONE.set(ValueLayout.JAVA_LONG, 0, 1L);
    }

    /**
     * Allocates a {@code struct pollfd} array watching {@code fds} for input.
     *
     * @param arena where the array lives
     * @param fds the descriptors, in order
     * @return the array
     */
    static MemorySegment pollFds(Arena arena, int[] fds) {
        MemorySegment pfds = arena.allocate(POLLFD_SIZE * Math.max(1, fds.length), 4);
        for (int i = 0; i < fds.length; i++) {
            setPollFd(pfds, i, fds[i]);
        }
        return pfds;
    }

    /** Makes entry {@code i} of a pollfd array watch {@code fd} for input. */
    static void setPollFd(MemorySegment pfds, int i, int fd) {
        pfds.set(ValueLayout.JAVA_INT, POLLFD_SIZE * i, fd);
        pfds.set(ValueLayout.JAVA_SHORT, POLLFD_SIZE * i + 4, POLLIN);
        pfds.set(ValueLayout.JAVA_SHORT, POLLFD_SIZE * i + REVENTS, (short) 0);
    }

    /**
     * Whether entry {@code i} of a polled array is ready: any revents (POLLIN, POLLERR, POLLHUP, POLLNVAL)
     * means the next read will not block.
     */
    static boolean ready(MemorySegment pfds, int i) {
        return pfds.get(ValueLayout.JAVA_SHORT, POLLFD_SIZE * i + REVENTS) != 0;
    }

    /**
     * {@code poll(2)} on the first {@code count} entries of a pollfd array, retried on EINTR; allocates
     * nothing. The kernel writes every entry's revents, so the array needs no reset between calls.
     *
     * @param pfds the array (see {@link #pollFds})
     * @param count how many entries to watch
     * @param timeoutMillis -1 to wait forever
     * @return how many are ready; 0 on timeout
     */
    static int poll(MemorySegment pfds, int count, int timeoutMillis) {
        int n;
        try {
            n = (int) POLL_PLAIN.invokeExact(pfds, (long) count, timeoutMillis);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("poll threw " + t, t);
        }
        if (n >= 0) {
            return n;
        }
        // Failed (EINTR, or an error that persists): poll again, now capturing errno. A wait repeated
        // is still the same wait; with a timeout it may last up to twice as long, once, after a signal.
        MemorySegment capture = Native.capture();
        for (;;) {
            try {
                n = (int) POLL_EXACT.invokeExact(capture, pfds, (long) count, timeoutMillis);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException("poll threw " + t, t);
            }
            if (n >= 0) {
                return n;
            }
            int errno = Native.errno(capture);
            if (errno != Errno.EINTR) {
                throw RdmaException.of("poll", errno, null);
            }
        }
    }

    /**
     * Waits until {@code fd} is readable (or has an error or hang-up, after which a read won't block).
     *
     * @param fd the descriptor
     * @param timeoutMillis -1 to wait forever
     * @return whether it is readable; {@code false} on timeout
     */
    static boolean pollIn(int fd, int timeoutMillis) {
        MemorySegment pfd = SCRATCH.get().pollFd();
        setPollFd(pfd, 0, fd);
        return poll(pfd, 1, timeoutMillis) > 0;
    }

    static int eventFd() {
        return EVENTFD.callInt(0, EFD_NONBLOCK | EFD_CLOEXEC);
    }

    /**
     * Adds one to an eventfd's counter, making it readable; allocates nothing, any thread. A full counter
     * (EAGAIN) is readable already.
     */
    static void eventFdSignal(int fd) {
        long n;
        try {
            n = (long) WRITE_PLAIN.invokeExact(fd, ONE, 8L);
            if (n >= 0) {
                return;
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("write threw " + t, t);
        }
        // Failed: again with errno captured. A full counter stays full (EAGAIN), a bad descriptor stays
        // bad; and if the counter was read meanwhile, adding one is what the caller wanted anyway.
        MemorySegment capture = Native.capture();
        try {
            n = (long) WRITE_EXACT.invokeExact(capture, fd, ONE, 8L);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("write threw " + t, t);
        }
        if (n < 0) {
            int errno = Native.errno(capture);
            if (errno != Errno.EAGAIN) {
                throw RdmaException.of("write(eventfd)", errno, null);
            }
        }
    }

    /** Resets a non-blocking eventfd's counter to zero; a read of an empty one fails with EAGAIN, ignored. */
    static void eventFdDrain(int fd) {
        MemorySegment counter = SCRATCH.get().counter();
        try {
            // The result does not matter: EAGAIN means empty already; a failed read leaves it readable,
            // which costs one more turn of the loop, no more.
            long n = (long) READ_PLAIN.invokeExact(fd, counter, 8L);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("read threw " + t, t);
        }
    }

    static void close(int fd) {
        CLOSE.callInt(fd);
    }

    /**
     * Lets go of what descriptor {@code fd} refers to while keeping the number taken: {@code dup2} puts an
     * eventfd in its place in one step, so no other open can get the number and whoever closes {@code fd}
     * later closes the eventfd. Reads of it find nothing, writes of anything but 8 bytes and ioctls fail.
     *
     * @param fd the descriptor
     */
    static void retire(int fd) {
        int placeholder = eventFd();
        try {
            DUP2.callInt(placeholder, fd);
        } finally {
            close(placeholder);
        }
    }

    /**
     * {@code getrlimit(RLIMIT_MEMLOCK)}: the most memory this process may pin, as the kernel checks it when
     * a registration pins pages ({@code struct rlimit}: two unsigned longs, soft then hard).
     *
     * @return {soft, hard} in bytes; {@code RLIM_INFINITY} (all ones) reads as -1, "unlimited"
     * @throws RdmaException naming {@code getrlimit} and its errno when the call fails
     */
    static long[] memlockLimit() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment rlimit = arena.allocate(ValueLayout.JAVA_LONG, 2);
            GETRLIMIT.callInt(RLIMIT_MEMLOCK, rlimit);
            return new long[] {rlimit.getAtIndex(ValueLayout.JAVA_LONG, 0), rlimit.getAtIndex(ValueLayout.JAVA_LONG, 1)};
        }
    }
}
