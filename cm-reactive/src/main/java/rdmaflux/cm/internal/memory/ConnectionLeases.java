package rdmaflux.cm.internal.memory;

import rdmaflux.cm.RdmaConnection;
import rdmaflux.cm.RegisteredBuffer;

import java.lang.foreign.MemorySegment;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import rdmaflux.verbs.AccessFlags;

/**
 * The application's registrations made through one connection ({@code RdmaConnection.register}), taken
 * from the loops' {@link Registrations} cache and returned when the connection ends, if the application
 * did not close them first.
 *
 * <p>Threads: any thread registers; the CM loop {@link #closeAll() closes} them after the queue pair is
 * destroyed.
 */
public final class ConnectionLeases {
    private final Registrations registrations;
    private final Set<Registration.Lease> leases = ConcurrentHashMap.newKeySet();
    /** Set once {@link #closeAll()} started: no registration is taken after. */
    private volatile boolean closed;

    public ConnectionLeases(Registrations registrations) {
        this.registrations = registrations;
    }

    /**
     * Registers memory through the domain's cache; closed by the application or by {@link #closeAll()}.
     *
     * @throws IllegalStateException when the connection ended meanwhile
     */
    public RegisteredBuffer register(MemorySegment memory, AccessFlags access) {
        Registration.Lease lease = registrations.lease(memory, access, leases);
        // Added to the set before the flag is read; closeAll sets it before reading the set: one sees the other.
        if (closed) {
            lease.close();
            throw new IllegalStateException("the connection is closed");
        }
        return lease.view();
    }

    /** CM loop, once no device uses them (the queue pair is gone): returns every lease left. */
    public void closeAll() {
        closed = true;
        for (Registration.Lease lease : leases) {
            lease.close();
        }
    }
}
