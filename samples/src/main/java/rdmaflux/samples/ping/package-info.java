/**
 * The {@code ping} sample: rdma-core's {@code rping} protocol on the reactive API, interoperable with
 * the real {@code rping} in both roles. {@link rdmaflux.samples.ping.Rping} is the command and describes
 * the protocol; {@link rdmaflux.samples.ping.RpingClient} and {@link rdmaflux.samples.ping.RpingServer}
 * are the two sides as reusable {@code Mono}s.
 */
package rdmaflux.samples.ping;
