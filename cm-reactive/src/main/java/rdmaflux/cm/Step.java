package rdmaflux.cm;

/** A step of establishing or tearing down a connection; each has its own timeout. */
public enum Step {
    /** rdma_resolve_addr until ADDR_RESOLVED. */
    ADDRESS,
    /** rdma_resolve_route until ROUTE_RESOLVED. */
    ROUTE,
    /** rdma_connect until ESTABLISHED (client). */
    CONNECT,
    /** rdma_accept until ESTABLISHED (server). */
    ACCEPT,
    /** An established connection: no timeout. */
    TRANSFER,
    /** rdma_disconnect until DISCONNECTED. */
    DISCONNECT
}
