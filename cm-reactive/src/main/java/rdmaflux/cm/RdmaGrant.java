package rdmaflux.cm;

import reactor.core.publisher.Mono;
import rdmaflux.verbs.RemoteBuffer;

/**
 * Revocable remote access to a range of registered memory, made by {@link RdmaConnection#grant}: a type-2
 * memory window bound through the connection's queue pair, so its key works only on that connection and
 * dies when the grant is {@linkplain #revoke() revoked} or the connection ends, while the memory stays
 * registered. Until then the grant holds its registration: {@link RegisteredBuffer#close()} defers the
 * deregistration.
 *
 * <p>On Soft-RoCE (Linux 6.1) an access through the key is checked against the whole registration, not the
 * granted range (docs/security.md); its access flags, its revocation and its binding to one connection are
 * enforced.
 */
public interface RdmaGrant {
    /**
     * What to hand the peer: the granted range's address and length and the window's key.
     *
     * @return the descriptor, the same for the life of the grant
     */
    RemoteBuffer remote();

    /**
     * Revokes the key: posts a local invalidate of it on the connection's queue pair and completes when that
     * completed; from then on the peer's accesses through it fail with a remote access error. The memory stays
     * registered. Idempotent: later calls return the same outcome. On a connection that is closing, completes
     * once the connection's resources are freed (the key dies with its queue pair).
     *
     * @return completes when the key is dead
     */
    Mono<Void> revoke();
}
