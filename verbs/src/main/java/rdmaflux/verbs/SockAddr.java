package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;

import rdmaflux.verbs.ffi.sockaddr_in;
import rdmaflux.verbs.ffi.sockaddr_in6;
import rdmaflux.verbs.ffi.sockaddr_storage;

/** Converts between {@link InetSocketAddress} and C socket addresses. */
final class SockAddr {
    static final int AF_INET = 2;
    static final int AF_INET6 = 10;

    private SockAddr() {
    }

    static MemorySegment of(InetSocketAddress a, Arena arena) {
        return write(a, sockaddr_storage.allocate(arena));
    }

    /**
     * Writes {@code a} as a C socket address into {@code s}, zeroing the rest of it.
     *
     * @param a a resolved address
     * @param s at least {@code sizeof(struct sockaddr_storage)} bytes
     * @return {@code s}
     */
    static MemorySegment write(InetSocketAddress a, MemorySegment s) {
        if (a.isUnresolved()) {
            throw new IllegalArgumentException("unresolved address " + a + ": resolve the host name first");
        }
        s.fill((byte) 0);
        InetAddress ip = a.getAddress();
        short port = Short.reverseBytes((short) a.getPort());
        if (ip instanceof Inet4Address) {
            sockaddr_in.sin_family(s, (short) AF_INET);
            sockaddr_in.sin_port(s, port);
            MemorySegment.copy(ip.getAddress(), 0, s, ValueLayout.JAVA_BYTE, sockaddr_in.sin_addr$offset(), 4);
        } else {
            sockaddr_in6.sin6_family(s, (short) AF_INET6);
            sockaddr_in6.sin6_port(s, port);
            MemorySegment.copy(ip.getAddress(), 0, s, ValueLayout.JAVA_BYTE, sockaddr_in6.sin6_addr$offset(), 16);
            sockaddr_in6.sin6_scope_id(s, ((Inet6Address) ip).getScopeId());
        }
        return s;
    }

    /** {@return the address, or {@code null} for AF_UNSPEC (not yet bound or resolved)} */
    static InetSocketAddress read(MemorySegment s) {
        int family = Short.toUnsignedInt(sockaddr_in.sin_family(s));
        try {
            if (family == AF_INET) {
                byte[] ip = s.asSlice(sockaddr_in.sin_addr$offset(), 4).toArray(ValueLayout.JAVA_BYTE);
                return new InetSocketAddress(InetAddress.getByAddress(ip),
                        Short.toUnsignedInt(Short.reverseBytes(sockaddr_in.sin_port(s))));
            }
            if (family == AF_INET6) {
                byte[] ip = s.asSlice(sockaddr_in6.sin6_addr$offset(), 16).toArray(ValueLayout.JAVA_BYTE);
                return new InetSocketAddress(Inet6Address.getByAddress(null, ip, sockaddr_in6.sin6_scope_id(s)),
                        Short.toUnsignedInt(Short.reverseBytes(sockaddr_in6.sin6_port(s))));
            }
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
        return null;
    }
}
