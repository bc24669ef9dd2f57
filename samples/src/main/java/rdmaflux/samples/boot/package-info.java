/** A Spring Boot application whose RSocket routes are served over RDMA by rdmaflux's auto-configuration. */
package rdmaflux.samples.boot;
