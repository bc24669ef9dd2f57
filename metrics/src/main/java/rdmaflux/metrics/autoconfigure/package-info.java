/**
 * Spring Boot auto-configuration of rdmaflux: the {@code rdmaflux.*} properties onto the connection
 * options, loops disposed with the context, meters in the application's registry, the {@code rdma}
 * health indicator, and Spring's RSocket support over RDMA. Spring Boot is an optional dependency: nothing
 * here is loaded unless the application has it.
 */
package rdmaflux.metrics.autoconfigure;
