/**
 * rdmaflux verbs: a safe Java layer over libibverbs and librdmacm (rdma-core) through the FFM API.
 *
 * <p>Only {@code rdmaflux.verbs} is exported. The jextract-generated bindings in
 * {@code rdmaflux.verbs.ffi} are internal: their layouts follow one rdma-core version and change
 * when the bindings are regenerated.
 *
 * <p>This module calls restricted FFM methods. Grant it native access with
 * {@code --enable-native-access=rdmaflux.verbs} on the module path, or
 * {@code --enable-native-access=ALL-UNNAMED} on the class path.
 */
module rdmaflux.verbs {
    exports rdmaflux.verbs;
}
