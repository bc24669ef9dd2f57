package rdmaflux.metrics;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Per-device resource counts, as {@code rdma resource show} prints them, read with the same single
 * netlink request the tool sends ({@code RDMA_NLDEV_CMD_RES_GET}, dumped for all devices) instead of
 * running the tool: a few system calls per read rather than a process. Results are cached for
 * {@value #CACHE_MILLIS} ms, so all the gauges of one scrape share one request.
 *
 * <p>The constants come from the kernel's UAPI header {@code rdma/rdma_netlink.h}: they are ABI.
 */
final class ResourceCounts implements AutoCloseable {
    /** The summary entries current kernels report (older ones lack ctx and srq: those read NaN). */
    static final List<String> TYPES = List.of("pd", "cq", "qp", "cm_id", "mr", "ctx", "srq");
    static final long CACHE_MILLIS = 500;

    private static final int AF_NETLINK = 16;
    private static final int SOCK_RAW = 3;
    private static final int SOCK_CLOEXEC = 0x80000;
    private static final int NETLINK_RDMA = 20;
    private static final int SOL_SOCKET = 1;
    private static final int SO_RCVTIMEO = 20;
    private static final int NLM_F_REQUEST = 0x1;
    private static final int NLM_F_DUMP = 0x300;
    private static final int NLMSG_ERROR = 2;
    private static final int NLMSG_DONE = 3;
    private static final int RDMA_NL_NLDEV = 5;
    private static final int RDMA_NLDEV_CMD_RES_GET = 9;
    private static final int ATTR_DEV_NAME = 2;
    private static final int ATTR_RES_SUMMARY = 15;
    private static final int ATTR_RES_SUMMARY_ENTRY = 16;
    private static final int ATTR_RES_SUMMARY_ENTRY_NAME = 17;
    private static final int ATTR_RES_SUMMARY_ENTRY_CURR = 18;
    private static final int NLA_TYPE_MASK = 0x3fff;
    private static final int BUFFER = 64 * 1024;

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.nativeOrder());
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.nativeOrder());
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.nativeOrder());

    private static final class Libc {
        static final MethodHandle SOCKET;
        static final MethodHandle SETSOCKOPT;
        static final MethodHandle SENDTO;
        static final MethodHandle RECV;
        static final MethodHandle CLOSE;

        static {
            Linker linker = Linker.nativeLinker();
            SymbolLookup libc = linker.defaultLookup();
            SOCKET = linker.downcallHandle(libc.find("socket").orElseThrow(), FunctionDescriptor.of(
                    ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
            SETSOCKOPT = linker.downcallHandle(libc.find("setsockopt").orElseThrow(), FunctionDescriptor.of(
                    ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                    ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
            SENDTO = linker.downcallHandle(libc.find("sendto").orElseThrow(), FunctionDescriptor.of(
                    ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
            RECV = linker.downcallHandle(libc.find("recv").orElseThrow(), FunctionDescriptor.of(
                    ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_INT));
            CLOSE = linker.downcallHandle(libc.find("close").orElseThrow(), FunctionDescriptor.of(
                    ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        }
    }

    private Map<String, Map<String, Long>> cached = Map.of();
    private long readAt;
    private boolean failed;
    private boolean closed;
    private int seq;

    /** {@return the current count of {@code type} on {@code device}, NaN when the kernel does not say} */
    synchronized double count(String device, String type) {
        if (closed) {
            return Double.NaN;
        }
        long now = System.currentTimeMillis();
        if (readAt == 0 || now - readAt > CACHE_MILLIS) {
            readAt = now;
            try {
                cached = dump();
            } catch (Throwable e) {
                if (!failed) {
                    System.getLogger(ResourceCounts.class.getName()).log(System.Logger.Level.WARNING,
                            "rdmaflux metrics: cannot read RDMA resource counts over netlink: " + e);
                }
                failed = true;
                cached = Map.of();
            }
        }
        Long v = cached.getOrDefault(device, Map.of()).get(type);
        return v == null ? Double.NaN : v;
    }

    @Override
    public synchronized void close() {
        closed = true;
    }

    /** One RES_GET dump: device name to summary entry name to current count. */
    Map<String, Map<String, Long>> dump() throws Throwable {
        int fd = (int) Libc.SOCKET.invokeExact(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
        if (fd < 0) {
            throw new IllegalStateException("socket(AF_NETLINK, NETLINK_RDMA) failed (no RDMA netlink in this kernel?)");
        }
        try (Arena arena = Arena.ofConfined()) {
            // A reply that never comes must not hang the scrape.
            MemorySegment timeout = arena.allocate(16, 8);
            timeout.set(ValueLayout.JAVA_LONG, 0, 1);
            int rc = (int) Libc.SETSOCKOPT.invokeExact(fd, SOL_SOCKET, SO_RCVTIMEO, timeout, 16);
            MemorySegment request = arena.allocate(16, 4);
            int mySeq = ++seq;
            request.set(INT, 0, 16);
            request.set(SHORT, 4, (short) ((RDMA_NL_NLDEV << 10) + RDMA_NLDEV_CMD_RES_GET));
            request.set(SHORT, 6, (short) (NLM_F_REQUEST | NLM_F_DUMP));
            request.set(INT, 8, mySeq);
            request.set(INT, 12, 0);
            MemorySegment kernel = arena.allocate(12, 4); // struct sockaddr_nl, nl_pid 0 = the kernel
            kernel.set(SHORT, 0, (short) AF_NETLINK);
            long sent = (long) Libc.SENDTO.invokeExact(fd, request, 16L, 0, kernel, 12);
            if (sent != 16 || rc != 0) {
                throw new IllegalStateException("sending the netlink request failed");
            }
            Map<String, Map<String, Long>> out = new HashMap<>();
            MemorySegment buf = arena.allocate(BUFFER, 8);
            for (;;) {
                long n = (long) Libc.RECV.invokeExact(fd, buf, (long) BUFFER, 0);
                if (n <= 0) {
                    throw new IllegalStateException("no netlink reply (recv returned " + n + ")");
                }
                if (parseMessages(buf, n, out)) {
                    return out;
                }
            }
        } finally {
            int ignored = (int) Libc.CLOSE.invokeExact(fd);
        }
    }

    /**
     * Parses one {@code recv}'s worth of netlink messages into {@code out}.
     *
     * @return whether the dump is complete ({@code NLMSG_DONE} seen)
     */
    static boolean parseMessages(MemorySegment buf, long n, Map<String, Map<String, Long>> out) {
        int off = 0;
        while (off + 16 <= n) {
            int len = buf.get(INT, off);
            int type = Short.toUnsignedInt(buf.get(SHORT, off + 4));
            if (len < 16 || off + len > n) {
                throw new IllegalStateException("malformed netlink message");
            }
            if (type == NLMSG_DONE) {
                return true;
            }
            if (type == NLMSG_ERROR) {
                throw new IllegalStateException("netlink error " + buf.get(INT, off + 16));
            }
            parseDevice(buf.asSlice(off + 16, len - 16), out);
            off += align(len);
        }
        return false;
    }

    private static int align(int len) {
        return (len + 3) & ~3;
    }

    private static void parseDevice(MemorySegment attrs, Map<String, Map<String, Long>> out) {
        String name = null;
        Map<String, Long> counts = new HashMap<>();
        for (long off = 0; off + 4 <= attrs.byteSize(); ) {
            int len = Short.toUnsignedInt(attrs.get(SHORT, off));
            int type = attrs.get(SHORT, off + 2) & NLA_TYPE_MASK;
            if (len < 4 || off + len > attrs.byteSize()) {
                break;
            }
            MemorySegment payload = attrs.asSlice(off + 4, len - 4);
            if (type == ATTR_DEV_NAME) {
                name = string(payload);
            } else if (type == ATTR_RES_SUMMARY) {
                forEach(payload, ATTR_RES_SUMMARY_ENTRY, entry -> {
                    String[] entryName = new String[1];
                    long[] current = {-1};
                    forEach(entry, -1, a -> { }, (t, p) -> {
                        if (t == ATTR_RES_SUMMARY_ENTRY_NAME) {
                            entryName[0] = string(p);
                        } else if (t == ATTR_RES_SUMMARY_ENTRY_CURR && p.byteSize() >= 8) {
                            current[0] = p.get(LONG, 0);
                        }
                    });
                    if (entryName[0] != null && current[0] >= 0) {
                        counts.put(entryName[0], current[0]);
                    }
                }, (t, p) -> { });
            }
            off += align(len);
        }
        if (name != null) {
            out.put(name, counts);
        }
    }

    /** Walks the attributes in {@code nested}: those of type {@code wanted} go to {@code each}, all to {@code any}. */
    private static void forEach(MemorySegment nested, int wanted, java.util.function.Consumer<MemorySegment> each,
                                java.util.function.BiConsumer<Integer, MemorySegment> any) {
        for (long off = 0; off + 4 <= nested.byteSize(); ) {
            int len = Short.toUnsignedInt(nested.get(SHORT, off));
            int type = nested.get(SHORT, off + 2) & NLA_TYPE_MASK;
            if (len < 4 || off + len > nested.byteSize()) {
                return;
            }
            MemorySegment p = nested.asSlice(off + 4, len - 4);
            if (type == wanted) {
                each.accept(p);
            }
            any.accept(type, p);
            off += align(len);
        }
    }

    private static String string(MemorySegment p) {
        byte[] bytes = p.toArray(ValueLayout.JAVA_BYTE);
        int end = 0;
        while (end < bytes.length && bytes[end] != 0) {
            end++;
        }
        return new String(bytes, 0, end, StandardCharsets.UTF_8);
    }
}
