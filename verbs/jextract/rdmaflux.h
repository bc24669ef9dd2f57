/*
 * rdmaflux.h - single entry point for jextract (see README.md in this directory).
 *
 * Bindings in verbs/src/main/java/rdmaflux/verbs/ffi are generated from this header
 * filtered by includes.txt. Regenerate with verbs/jextract/regenerate.
 */
#ifndef RDMAFLUX_JEXTRACT_H
#define RDMAFLUX_JEXTRACT_H

#include <sys/socket.h>
#include <netinet/in.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#endif /* RDMAFLUX_JEXTRACT_H */
