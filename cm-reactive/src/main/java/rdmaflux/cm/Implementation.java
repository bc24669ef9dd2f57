package rdmaflux.cm;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.net.InetAddress;
import java.net.InetSocketAddress;

import java.util.function.Consumer;

import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * The API's one access point to its implementation (with {@link LoopsImplementation} for the loops): the static entry points of
 * {@code rdmaflux.cm.internal.Entry}, looked up once by name, as the JDK's {@code SharedSecrets} hand
 * implementation objects across packages. The API thus depends on no internal package, while the internal
 * packages use the API's types; the module does not export them. The handles are resolved when this class
 * initialises, so a signature that drifts fails the first API call (and every test), not a later one.
 *
 * <p>Threads: any; the handles are immutable.
 */
final class Implementation {
    private static final String ENTRY = "rdmaflux.cm.internal.Entry";

    private static final MethodHandle CONNECT;
    private static final MethodHandle BIND;
    private static final MethodHandle BIND_DATAGRAM;
    private static final MethodHandle JOIN;
    private static final MethodHandle SENDER;
    private static final MethodHandle ON_LEAK;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            Class<?> entry = Class.forName(ENTRY, true, Implementation.class.getClassLoader());
            CONNECT = lookup.findStatic(entry, "connect",
                    MethodType.methodType(Mono.class, InetSocketAddress.class, ConnectionOptions.class));
            BIND = lookup.findStatic(entry, "bind", MethodType.methodType(Mono.class, InetSocketAddress.class,
                    ConnectionOptions.class, AcceptFilter.class, ServerOptions.class));
            BIND_DATAGRAM = lookup.findStatic(entry, "bindDatagram",
                    MethodType.methodType(Mono.class, InetSocketAddress.class, DatagramOptions.class));
            JOIN = lookup.findStatic(entry, "join",
                    MethodType.methodType(Mono.class, InetAddress.class, MulticastOptions.class));
            SENDER = lookup.findStatic(entry, "sender",
                    MethodType.methodType(Mono.class, InetAddress.class, MulticastOptions.class));
            ON_LEAK = lookup.findStatic(entry, "onLeak", MethodType.methodType(Disposable.class, Consumer.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private Implementation() {
    }

    @SuppressWarnings("unchecked")
    static Mono<RdmaConnection> connect(InetSocketAddress remote, ConnectionOptions options) {
        try {
            return (Mono<RdmaConnection>) (Mono<?>) CONNECT.invokeExact(remote, options);
        } catch (Throwable t) {
            throw LoopsImplementation.unchecked(t);
        }
    }

    @SuppressWarnings("unchecked")
    static Mono<RdmaServer> bind(InetSocketAddress address, ConnectionOptions options, AcceptFilter filter,
                                 ServerOptions serverOptions) {
        try {
            return (Mono<RdmaServer>) (Mono<?>) BIND.invokeExact(address, options, filter, serverOptions);
        } catch (Throwable t) {
            throw LoopsImplementation.unchecked(t);
        }
    }

    @SuppressWarnings("unchecked")
    static Mono<RdmaDatagramEndpoint> bindDatagram(InetSocketAddress local, DatagramOptions options) {
        try {
            return (Mono<RdmaDatagramEndpoint>) (Mono<?>) BIND_DATAGRAM.invokeExact(local, options);
        } catch (Throwable t) {
            throw LoopsImplementation.unchecked(t);
        }
    }

    @SuppressWarnings("unchecked")
    static Mono<MulticastMembership> join(InetAddress group, MulticastOptions options) {
        try {
            return (Mono<MulticastMembership>) (Mono<?>) JOIN.invokeExact(group, options);
        } catch (Throwable t) {
            throw LoopsImplementation.unchecked(t);
        }
    }

    @SuppressWarnings("unchecked")
    static Mono<MulticastSender> sender(InetAddress group, MulticastOptions options) {
        try {
            return (Mono<MulticastSender>) (Mono<?>) SENDER.invokeExact(group, options);
        } catch (Throwable t) {
            throw LoopsImplementation.unchecked(t);
        }
    }

    static Disposable onLeak(Consumer<? super RdmaLeak> listener) {
        try {
            return (Disposable) ON_LEAK.invokeExact((Consumer<?>) listener);
        } catch (Throwable t) {
            throw LoopsImplementation.unchecked(t);
        }
    }
}
