package rdmaflux.verbs;

/**
 * Linux errno values the library branches on, and their names and descriptions.
 *
 * <p>Names and texts come from glibc ({@code strerrorname_np}, {@code strerrordesc_np}), which are
 * thread-safe, unlike {@code strerror}; on a libc without them the number is shown instead.
 */
public final class Errno {
    /** Operation not permitted. */
    public static final int EPERM = 1;
    /** No such file or directory. */
    public static final int ENOENT = 2;
    /** Interrupted system call. */
    public static final int EINTR = 4;
    /** I/O error. */
    public static final int EIO = 5;
    /** No such device or address. */
    public static final int ENXIO = 6;
    /** Bad file descriptor. */
    public static final int EBADF = 9;
    /** Resource temporarily unavailable (also EWOULDBLOCK). */
    public static final int EAGAIN = 11;
    /** Cannot allocate memory. */
    public static final int ENOMEM = 12;
    /** Permission denied. */
    public static final int EACCES = 13;
    /** Bad address. */
    public static final int EFAULT = 14;
    /** Device or resource busy. */
    public static final int EBUSY = 16;
    /** File exists. */
    public static final int EEXIST = 17;
    /** No such device. */
    public static final int ENODEV = 19;
    /** Invalid argument. */
    public static final int EINVAL = 22;
    /** Too many open files in system. */
    public static final int ENFILE = 23;
    /** Too many open files. */
    public static final int EMFILE = 24;
    /** No space left on device. */
    public static final int ENOSPC = 28;
    /** Function not implemented. */
    public static final int ENOSYS = 38;
    /** No data available. */
    public static final int ENODATA = 61;
    /** Protocol error. */
    public static final int EPROTO = 71;
    /** Operation not supported. */
    public static final int EOPNOTSUPP = 95;
    /** Address already in use. */
    public static final int EADDRINUSE = 98;
    /** Cannot assign requested address. */
    public static final int EADDRNOTAVAIL = 99;
    /** Network is unreachable. */
    public static final int ENETUNREACH = 101;
    /** Connection reset by peer. */
    public static final int ECONNRESET = 104;
    /** Transport endpoint is not connected. */
    public static final int ENOTCONN = 107;
    /** Connection timed out. */
    public static final int ETIMEDOUT = 110;
    /** Connection refused. */
    public static final int ECONNREFUSED = 111;
    /** No route to host. */
    public static final int EHOSTUNREACH = 113;

    private Errno() {
    }

    /**
     * The symbolic name of an errno value.
     *
     * @param errno a positive errno value
     * @return e.g. {@code "ENODEV"}, or {@code "errno 4711"} for a value libc does not know
     */
    public static String name(int errno) {
        String s = Native.errnoName(errno);
        return s != null ? s : "errno " + errno;
    }

    /**
     * The human-readable description of an errno value, as {@code strerror} would give it.
     *
     * @param errno a positive errno value
     * @return e.g. {@code "No such device"}, or {@code "Unknown error 4711"}
     */
    public static String describe(int errno) {
        String s = Native.errnoDescription(errno);
        return s != null ? s : "Unknown error " + errno;
    }
}
