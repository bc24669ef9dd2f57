package rdmaflux.verbs;

import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.Optional;

/**
 * One used entry of a port's GID table, as {@code ibv_query_gid_ex} / {@code ibv_query_gid_table}
 * report it ({@code struct ibv_gid_entry}), copied.
 *
 * @param port the port number, from 1
 * @param index the index in the port's GID table: what {@code sgid_index} of an address handle or QP
 *              path refers to
 * @param gid the GID
 * @param type how the entry is used on the wire
 * @param netdevIndex interface index of the network device the entry belongs to (RoCE), 0 when there
 *                    is none (InfiniBand)
 */
public record GidEntry(int port, int index, Gid gid, GidType type, int netdevIndex) {

    /**
     * Looks the entry's network device up in this process's network namespace.
     *
     * @return the interface, empty for InfiniBand entries or an index this namespace does not know
     * @throws java.io.UncheckedIOException when the JDK cannot enumerate interfaces
     */
    public Optional<NetworkInterface> networkInterface() {
        if (netdevIndex == 0) {
            return Optional.empty();
        }
        try {
            return Optional.ofNullable(NetworkInterface.getByIndex(netdevIndex));
        } catch (SocketException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
