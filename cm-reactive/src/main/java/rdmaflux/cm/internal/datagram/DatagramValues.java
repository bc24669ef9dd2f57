package rdmaflux.cm.internal.datagram;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.net.InetAddress;
import java.net.InetSocketAddress;

import rdmaflux.cm.Datagram;
import rdmaflux.cm.DatagramPeer;
import rdmaflux.verbs.AddressHandle;
import rdmaflux.verbs.Gid;

/**
 * The datagram side's one access point to the non-public parts of the API's value types ({@link Datagram}'s
 * constructor and credit count, {@link DatagramPeer}'s constructor and address handle), as the JDK's
 * {@code SharedSecrets} give its implementation packages access to {@code java.lang}'s: the API keeps
 * them out of its public surface, and does not depend on this package. A module may look into its own
 * packages, so the handles resolve in the module and on the class path; a signature that drifts fails
 * this class's initialisation (and every datagram test) rather than a call.
 *
 * <p>Threads: any; the handles are immutable.
 */
public final class DatagramValues {
    private static final MethodHandle NEW_DATAGRAM;
    private static final MethodHandle CONSUMED;
    private static final MethodHandle RETAIN;
    private static final MethodHandle NEW_PEER;
    private static final MethodHandle PEER_ADDRESS_HANDLE;
    private static final MethodHandle BELONGS_TO;

    static {
        try {
            MethodHandles.Lookup here = MethodHandles.lookup();
            MethodHandles.Lookup d = MethodHandles.privateLookupIn(Datagram.class, here);
            NEW_DATAGRAM = d.findConstructor(Datagram.class, MethodType.methodType(void.class, byte[].class,
                    int.class, Gid.class, InetAddress.class, InetAddress.class, boolean.class, int.class,
                    Runnable.class));
            CONSUMED = d.findVirtual(Datagram.class, "consumed", MethodType.methodType(void.class));
            RETAIN = d.findVirtual(Datagram.class, "retain", MethodType.methodType(void.class));
            MethodHandles.Lookup p = MethodHandles.privateLookupIn(DatagramPeer.class, here);
            NEW_PEER = p.findConstructor(DatagramPeer.class, MethodType.methodType(void.class, Object.class,
                    InetSocketAddress.class, int.class, int.class, AddressHandle.class));
            PEER_ADDRESS_HANDLE = p.findGetter(DatagramPeer.class, "addressHandle", AddressHandle.class);
            BELONGS_TO = p.findVirtual(DatagramPeer.class, "belongsTo",
                    MethodType.methodType(boolean.class, Object.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private DatagramValues() {
    }

    /**
     * A received datagram.
     *
     * @param payload the payload, owned by the datagram from now on
     * @param sourceQpn the sender's QP number
     * @param sourceGid the sender's GID, or {@code null} without a GRH
     * @param source the sender's address, or {@code null} without a GRH
     * @param destination the address it was sent to, or {@code null} without a GRH
     * @param hasImmediate whether it carried immediate data
     * @param immediate the immediate data
     * @param owner returns the receive queue's credit once every subscriber saw it; or {@code null}
     * @return the datagram, with one reference (the caller's)
     */
    public static Datagram datagram(byte[] payload, int sourceQpn, Gid sourceGid, InetAddress source,
                                    InetAddress destination, boolean hasImmediate, int immediate, Runnable owner) {
        try {
            return (Datagram) NEW_DATAGRAM.invokeExact(payload, sourceQpn, sourceGid, source, destination,
                    hasImmediate, immediate, owner);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * One subscriber received or discarded {@code d}; the last one returns its credit.
     *
     * @param d the datagram
     */
    public static void consumed(Datagram d) {
        try {
            CONSUMED.invokeExact(d);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * One more subscriber has to see {@code d} before its credit returns.
     *
     * @param d the datagram
     */
    public static void retain(Datagram d) {
        try {
            RETAIN.invokeExact(d);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * A peer address resolved by an endpoint.
     *
     * @param owner the endpoint that resolved it (only it may send to the peer)
     * @param address the peer's address
     * @param qpNumber the peer's QP number
     * @param qkey the peer's Q_Key
     * @param handle the address handle to send with
     * @return the peer
     */
    public static DatagramPeer peer(Object owner, InetSocketAddress address, int qpNumber, int qkey,
                                    AddressHandle handle) {
        try {
            return (DatagramPeer) NEW_PEER.invokeExact(owner, address, qpNumber, qkey, handle);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * {@return the address handle to send to {@code peer} with}
     *
     * @param peer the peer
     */
    public static AddressHandle addressHandle(DatagramPeer peer) {
        try {
            return (AddressHandle) PEER_ADDRESS_HANDLE.invokeExact(peer);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    /**
     * {@return whether {@code endpoint} resolved {@code peer}}
     *
     * @param peer the peer
     * @param endpoint the endpoint
     */
    public static boolean belongsTo(DatagramPeer peer, Object endpoint) {
        try {
            return (boolean) BELONGS_TO.invokeExact(peer, endpoint);
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    private static RuntimeException unexpected(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException(t);
    }
}
