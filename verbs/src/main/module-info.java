/**
 * rdmaflux verbs: a safe Java layer over libibverbs and librdmacm (rdma-core) through the FFM API.
 * The generated bindings in {@code rdmaflux.verbs.ffi} stay internal.
 */
module rdmaflux.verbs {
    exports rdmaflux.verbs;
}
