package rdmaflux.cm.internal;

import java.net.InetAddress;
import java.net.InetSocketAddress;

import java.util.function.Consumer;

import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import rdmaflux.cm.AcceptFilter;
import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.DatagramOptions;
import rdmaflux.cm.MulticastMembership;
import rdmaflux.cm.MulticastOptions;
import rdmaflux.cm.MulticastSender;
import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RdmaDatagramEndpoint;
import rdmaflux.cm.RdmaLeak;
import rdmaflux.cm.RdmaLoops;
import rdmaflux.cm.RdmaServer;
import rdmaflux.cm.ServerOptions;
import rdmaflux.cm.internal.datagram.DatagramEndpoint;
import rdmaflux.cm.internal.datagram.GroupSender;
import rdmaflux.cm.internal.datagram.SharedGroup;
import rdmaflux.cm.internal.leak.LeakTracker;
import rdmaflux.cm.internal.lifecycle.ConnectionLifecycle;
import rdmaflux.cm.internal.lifecycle.Server;
import rdmaflux.cm.internal.loop.Loops;

/**
 * The implementation's entry points, the only ones the API ({@code rdmaflux.cm}) calls: the API reaches
 * them by name through its package-private {@code Implementation}, so that it depends on no internal
 * package and every internal package may depend on the API's types without a cycle. Each method is the
 * implementation of the API method of the same name.
 *
 * <p>Threads: any; each entry point hands its work to the loops.
 */
public final class Entry {
    private Entry() {
    }

    /**
     * {@code RdmaConnection.connect}.
     *
     * @param remote the server's address
     * @param options the connection's options
     * @return the connection once established
     */
    public static Mono<RdmaConnection> connect(InetSocketAddress remote, ConnectionOptions options) {
        return ConnectionLifecycle.connect(remote, options);
    }

    /**
     * {@code RdmaServer.bind}.
     *
     * @param address where to listen
     * @param options the accepted connections' options
     * @param filter which requests to accept
     * @param serverOptions the listener's options
     * @return the server once listening
     */
    public static Mono<RdmaServer> bind(InetSocketAddress address, ConnectionOptions options, AcceptFilter filter,
                                        ServerOptions serverOptions) {
        return Server.bind(address, options, filter, serverOptions);
    }

    /**
     * {@code RdmaDatagramEndpoint.bind}.
     *
     * @param local the local address
     * @param options the endpoint's options
     * @return the endpoint once bound
     */
    public static Mono<RdmaDatagramEndpoint> bindDatagram(InetSocketAddress local, DatagramOptions options) {
        return DatagramEndpoint.bind(local, options);
    }

    /**
     * {@code RdmaMulticast.join}.
     *
     * @param group the group
     * @param options the join's options
     * @return the membership once joined
     */
    public static Mono<MulticastMembership> join(InetAddress group, MulticastOptions options) {
        return SharedGroup.acquire(group, options);
    }

    /**
     * {@code RdmaMulticast.sender}.
     *
     * @param group the group
     * @param options the join's options
     * @return the sender once joined
     */
    public static Mono<MulticastSender> sender(InetAddress group, MulticastOptions options) {
        return GroupSender.create(group, options);
    }

    /** {@return {@code RdmaLoops.shared()}} */
    public static RdmaLoops sharedLoops() {
        return Loops.shared();
    }

    /**
     * {@code RdmaLoops.create}.
     *
     * @param prefix thread name prefix
     * @param completionLoops how many completion threads
     * @return the loops
     */
    public static RdmaLoops createLoops(String prefix, int completionLoops) {
        return Loops.create(prefix, completionLoops);
    }

    /**
     * The scheduler of options that name none.
     *
     * @param loops the options' loops, or {@code null} for the shared ones
     * @return the loops' default scheduler
     */
    public static Scheduler defaultScheduler(RdmaLoops loops) {
        if (loops == null) {
            return Loops.sharedScheduler();
        }
        if (!(loops instanceof Loops l)) {
            throw new IllegalArgumentException("loops must come from RdmaLoops.shared() or RdmaLoops.create(...), not "
                    + loops.getClass().getName());
        }
        return l.defaultScheduler();
    }

    /**
     * {@code RdmaLeakDetection.onLeak}.
     *
     * @param listener what to call with each leak
     * @return what ends the calls
     */
    public static Disposable onLeak(Consumer<? super RdmaLeak> listener) {
        return LeakTracker.onLeak(listener);
    }
}
