package rdmaflux.verbs;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import rdmaflux.verbs.ffi.RdmaH;

/**
 * rdma-core's exported functions: the table of those relinked with errno capture (see {@link Native}),
 * the exact calls of the completion and event paths, and ({@link Plain}) the few that report no error,
 * called through the generated bindings. Part of the native core, with {@link Native}, {@link CmCalls},
 * {@link ProviderCalls} and {@link Posix}: no other class calls into rdma-core.
 *
 * <p>Kept in one holder class so that nothing links against libibverbs or librdmacm before
 * {@link Rdma#ensureAvailable()} has had the chance to explain why they are missing.
 */
final class Calls {
    static final Native.Fn IBV_GET_DEVICE_LIST = Native.fn("ibv_get_device_list", RdmaH.ibv_get_device_list$address(), RdmaH.ibv_get_device_list$descriptor());
    static final Native.Fn IBV_OPEN_DEVICE = Native.fn("ibv_open_device", RdmaH.ibv_open_device$address(), RdmaH.ibv_open_device$descriptor());
    static final Native.Fn IBV_CLOSE_DEVICE = Native.fn("ibv_close_device", RdmaH.ibv_close_device$address(), RdmaH.ibv_close_device$descriptor());
    static final Native.Fn IBV_GET_ASYNC_EVENT = Native.fn("ibv_get_async_event", RdmaH.ibv_get_async_event$address(), RdmaH.ibv_get_async_event$descriptor());
    static final Native.Fn IBV_QUERY_DEVICE = Native.fn("ibv_query_device", RdmaH.ibv_query_device$address(), RdmaH.ibv_query_device$descriptor());
    static final Native.Fn IBV_QUERY_PORT = Native.fn("ibv_query_port", RdmaH.ibv_query_port$address(), RdmaH.ibv_query_port$descriptor());
    static final Native.Fn IBV_QUERY_GID = Native.fn("ibv_query_gid", RdmaH.ibv_query_gid$address(), RdmaH.ibv_query_gid$descriptor());
    static final Native.Fn IBV_ALLOC_PD = Native.fn("ibv_alloc_pd", RdmaH.ibv_alloc_pd$address(), RdmaH.ibv_alloc_pd$descriptor());
    static final Native.Fn IBV_DEALLOC_PD = Native.fn("ibv_dealloc_pd", RdmaH.ibv_dealloc_pd$address(), RdmaH.ibv_dealloc_pd$descriptor());
    static final Native.Fn IBV_REG_MR = Native.fn("ibv_reg_mr", RdmaH.ibv_reg_mr$address(), RdmaH.ibv_reg_mr$descriptor());
    static final Native.Fn IBV_DEREG_MR = Native.fn("ibv_dereg_mr", RdmaH.ibv_dereg_mr$address(), RdmaH.ibv_dereg_mr$descriptor());
    static final Native.Fn IBV_CREATE_COMP_CHANNEL = Native.fn("ibv_create_comp_channel", RdmaH.ibv_create_comp_channel$address(), RdmaH.ibv_create_comp_channel$descriptor());
    static final Native.Fn IBV_DESTROY_COMP_CHANNEL = Native.fn("ibv_destroy_comp_channel", RdmaH.ibv_destroy_comp_channel$address(), RdmaH.ibv_destroy_comp_channel$descriptor());
    static final Native.Fn IBV_CREATE_CQ = Native.fn("ibv_create_cq", RdmaH.ibv_create_cq$address(), RdmaH.ibv_create_cq$descriptor());
    static final Native.Fn IBV_DESTROY_CQ = Native.fn("ibv_destroy_cq", RdmaH.ibv_destroy_cq$address(), RdmaH.ibv_destroy_cq$descriptor());
    static final Native.Fn IBV_GET_CQ_EVENT = Native.fn("ibv_get_cq_event", RdmaH.ibv_get_cq_event$address(), RdmaH.ibv_get_cq_event$descriptor());
    static final Native.Fn IBV_CREATE_SRQ = Native.fn("ibv_create_srq", RdmaH.ibv_create_srq$address(), RdmaH.ibv_create_srq$descriptor());
    static final Native.Fn IBV_MODIFY_SRQ = Native.fn("ibv_modify_srq", RdmaH.ibv_modify_srq$address(), RdmaH.ibv_modify_srq$descriptor());
    static final Native.Fn IBV_QUERY_SRQ = Native.fn("ibv_query_srq", RdmaH.ibv_query_srq$address(), RdmaH.ibv_query_srq$descriptor());
    static final Native.Fn IBV_DESTROY_SRQ = Native.fn("ibv_destroy_srq", RdmaH.ibv_destroy_srq$address(), RdmaH.ibv_destroy_srq$descriptor());
    static final Native.Fn IBV_CREATE_QP = Native.fn("ibv_create_qp", RdmaH.ibv_create_qp$address(), RdmaH.ibv_create_qp$descriptor());
    static final Native.Fn IBV_MODIFY_QP = Native.fn("ibv_modify_qp", RdmaH.ibv_modify_qp$address(), RdmaH.ibv_modify_qp$descriptor());
    static final Native.Fn IBV_QUERY_QP = Native.fn("ibv_query_qp", RdmaH.ibv_query_qp$address(), RdmaH.ibv_query_qp$descriptor());
    static final Native.Fn IBV_DESTROY_QP = Native.fn("ibv_destroy_qp", RdmaH.ibv_destroy_qp$address(), RdmaH.ibv_destroy_qp$descriptor());
    static final Native.Fn IBV_CREATE_AH = Native.fn("ibv_create_ah", RdmaH.ibv_create_ah$address(), RdmaH.ibv_create_ah$descriptor());
    static final Native.Fn IBV_DESTROY_AH = Native.fn("ibv_destroy_ah", RdmaH.ibv_destroy_ah$address(), RdmaH.ibv_destroy_ah$descriptor());
    static final Native.Fn RDMA_CREATE_EVENT_CHANNEL = Native.fn("rdma_create_event_channel", RdmaH.rdma_create_event_channel$address(), RdmaH.rdma_create_event_channel$descriptor());
    static final Native.Fn RDMA_CREATE_ID = Native.fn("rdma_create_id", RdmaH.rdma_create_id$address(), RdmaH.rdma_create_id$descriptor());
    static final Native.Fn RDMA_DESTROY_ID = Native.fn("rdma_destroy_id", RdmaH.rdma_destroy_id$address(), RdmaH.rdma_destroy_id$descriptor());
    static final Native.Fn RDMA_BIND_ADDR = Native.fn("rdma_bind_addr", RdmaH.rdma_bind_addr$address(), RdmaH.rdma_bind_addr$descriptor());
    static final Native.Fn RDMA_RESOLVE_ADDR = Native.fn("rdma_resolve_addr", RdmaH.rdma_resolve_addr$address(), RdmaH.rdma_resolve_addr$descriptor());
    static final Native.Fn RDMA_RESOLVE_ROUTE = Native.fn("rdma_resolve_route", RdmaH.rdma_resolve_route$address(), RdmaH.rdma_resolve_route$descriptor());
    static final Native.Fn RDMA_CREATE_QP = Native.fn("rdma_create_qp", RdmaH.rdma_create_qp$address(), RdmaH.rdma_create_qp$descriptor());
    static final Native.Fn RDMA_CONNECT = Native.fn("rdma_connect", RdmaH.rdma_connect$address(), RdmaH.rdma_connect$descriptor());
    static final Native.Fn RDMA_LISTEN = Native.fn("rdma_listen", RdmaH.rdma_listen$address(), RdmaH.rdma_listen$descriptor());
    static final Native.Fn RDMA_ACCEPT = Native.fn("rdma_accept", RdmaH.rdma_accept$address(), RdmaH.rdma_accept$descriptor());
    static final Native.Fn RDMA_REJECT = Native.fn("rdma_reject", RdmaH.rdma_reject$address(), RdmaH.rdma_reject$descriptor());
    static final Native.Fn RDMA_DISCONNECT = Native.fn("rdma_disconnect", RdmaH.rdma_disconnect$address(), RdmaH.rdma_disconnect$descriptor());
    static final Native.Fn RDMA_JOIN_MULTICAST = Native.fn("rdma_join_multicast", RdmaH.rdma_join_multicast$address(), RdmaH.rdma_join_multicast$descriptor());
    static final Native.Fn RDMA_JOIN_MULTICAST_EX = Native.fn("rdma_join_multicast_ex", RdmaH.rdma_join_multicast_ex$address(), RdmaH.rdma_join_multicast_ex$descriptor());
    static final Native.Fn RDMA_LEAVE_MULTICAST = Native.fn("rdma_leave_multicast", RdmaH.rdma_leave_multicast$address(), RdmaH.rdma_leave_multicast$descriptor());
    static final Native.Fn RDMA_GET_CM_EVENT = Native.fn("rdma_get_cm_event", RdmaH.rdma_get_cm_event$address(), RdmaH.rdma_get_cm_event$descriptor());
    static final Native.Fn RDMA_ACK_CM_EVENT = Native.fn("rdma_ack_cm_event", RdmaH.rdma_ack_cm_event$address(), RdmaH.rdma_ack_cm_event$descriptor());
    static final Native.Fn RDMA_SET_OPTION = Native.fn("rdma_set_option", RdmaH.rdma_set_option$address(), RdmaH.rdma_set_option$descriptor());
    static final Native.Fn RDMA_MIGRATE_ID = Native.fn("rdma_migrate_id", RdmaH.rdma_migrate_id$address(), RdmaH.rdma_migrate_id$descriptor());
    static final Native.Fn RDMA_ESTABLISH = Native.fn("rdma_establish", RdmaH.rdma_establish$address(), RdmaH.rdma_establish$descriptor());

    /** Without errno capture, whose per-call slice of the capture segment is garbage unless C2 removes it. */
    private static final MethodHandle GET_CQ_EVENT_PLAIN = RdmaH.ibv_get_cq_event$handle();
    private static final MethodHandle GET_CQ_EVENT = IBV_GET_CQ_EVENT.handle();
    private static final MethodHandle GET_ASYNC_EVENT = IBV_GET_ASYNC_EVENT.handle();

    private Calls() {
    }

    /**
     * {@code ibv_get_cq_event} without errno capture, exact: a completion loop calls it at least once per
     * wake-up (the last call finds nothing), where {@link Native.Fn#invoke}'s argument array would be garbage.
     *
     * @return 0, or -1 when no event was read (why is not known: see {@link #getCqEventChecked})
     */
    static int getCqEvent(MemorySegment channel, MemorySegment cqOut, MemorySegment contextOut) {
        try {
            return (int) GET_CQ_EVENT_PLAIN.invokeExact(channel, cqOut, contextOut);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("ibv_get_cq_event threw " + t, t);
        }
    }

    /**
     * {@code ibv_get_cq_event} with errno capture, to learn why a call failed.
     *
     * @return whether an event was read; {@code false} when none is pending (EAGAIN)
     * @throws RdmaException for any other failure
     */
    static boolean getCqEventChecked(MemorySegment channel, MemorySegment cqOut, MemorySegment contextOut) {
        MemorySegment capture = Native.capture();
        int rc;
        try {
            rc = (int) GET_CQ_EVENT.invokeExact(capture, channel, cqOut, contextOut);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("ibv_get_cq_event threw " + t, t);
        }
        if (rc != 0) {
            int errno = Native.errno(capture);
            if (errno == Errno.EAGAIN) {
                return false;
            }
            throw RdmaException.of("ibv_get_cq_event", errno, null);
        }
        return true;
    }

    /**
     * {@code ibv_get_async_event} with errno capture, exact, so that a watcher checking a non-blocking
     * context on a timer allocates nothing while no event arrives.
     *
     * @return whether an event was written to {@code event}; {@code false} when none is pending (EAGAIN)
     * @throws RdmaException for any other failure
     */
    static boolean getAsyncEvent(MemorySegment context, MemorySegment event) {
        MemorySegment capture = Native.capture();
        int rc;
        try {
            rc = (int) GET_ASYNC_EVENT.invokeExact(capture, context, event);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("ibv_get_async_event threw " + t, t);
        }
        if (rc != 0) {
            int errno = Native.errno(capture);
            if (errno == Errno.EAGAIN) {
                return false;
            }
            throw RdmaException.of("ibv_get_async_event", errno, null);
        }
        return true;
    }

    /**
     * The exported functions that report no error (they return nothing, or a value without an error
     * convention), called through the generated bindings, which link each on its first call. A class of
     * its own so that these calls do not link {@link Calls}' table.
     */
    static final class Plain {
        /**
         * {@code ibv_is_fork_initialized}, which the generated bindings lack (their header selection predates
         * it): found in libibverbs by name. It reports no error.
         */
        private static final MethodHandle IBV_IS_FORK_INITIALIZED = Native.LINKER.downcallHandle(
                java.lang.foreign.SymbolLookup.libraryLookup("libibverbs.so.1", java.lang.foreign.Arena.global())
                        .findOrThrow("ibv_is_fork_initialized"),
                java.lang.foreign.FunctionDescriptor.of(java.lang.foreign.ValueLayout.JAVA_INT));

        private Plain() {
        }

        /** {@return {@code ibv_is_fork_initialized()}: an {@code enum ibv_fork_status} value} */
        static int isForkInitialized() {
            try {
                return (int) IBV_IS_FORK_INITIALIZED.invokeExact();
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException("ibv_is_fork_initialized threw " + t, t);
            }
        }

        static void ackCqEvents(MemorySegment cq, int count) {
            RdmaH.ibv_ack_cq_events(cq, count);
        }

        static void ackAsyncEvent(MemorySegment event) {
            RdmaH.ibv_ack_async_event(event);
        }

        static void destroyEventChannel(MemorySegment channel) {
            RdmaH.rdma_destroy_event_channel(channel);
        }

        /** {@code rdma_destroy_qp}, which returns nothing: the QP of a CM id. */
        static void rdmaDestroyQp(MemorySegment id) {
            RdmaH.rdma_destroy_qp(id);
        }

        /** {@return the QP's {@code struct ibv_qp_ex}, or NULL when it was not created as an extended one} */
        static MemorySegment qpToQpEx(MemorySegment qp) {
            return RdmaH.ibv_qp_to_qp_ex(qp);
        }

        static void freeDeviceList(MemorySegment list) {
            RdmaH.ibv_free_device_list(list);
        }

        /** {@code rdma_get_devices}: librdmacm's contexts of the devices it does not know to be gone; NULL on failure. */
        static MemorySegment rdmaGetDevices(MemorySegment count) {
            return RdmaH.rdma_get_devices(count);
        }

        static void rdmaFreeDevices(MemorySegment list) {
            RdmaH.rdma_free_devices(list);
        }

        /** {@return the device's kernel name, e.g. {@code rxe0}} */
        static String deviceName(MemorySegment device) {
            return Native.string(RdmaH.ibv_get_device_name(device));
        }

        /** {@return the device's node GUID, in network byte order as rdma-core gives it} */
        static long deviceGuid(MemorySegment device) {
            return RdmaH.ibv_get_device_guid(device);
        }

        /** {@return rdma-core's text for a work completion status} */
        static String wcStatusText(int status) {
            return Native.string(RdmaH.ibv_wc_status_str(status));
        }
    }

    /**
     * {@code _ibv_query_gid_ex} and {@code _ibv_query_gid_table} (IBVERBS_1.11, rdma-core 32), linked on
     * first use so that an older libibverbs costs only these calls.
     */
    static final class Gid {
        private static final Native.Fn QUERY_GID_EX;
        private static final Native.Fn QUERY_GID_TABLE;
        private static final Throwable MISSING;

        static {
            Native.Fn ex = null;
            Native.Fn table = null;
            Throwable missing = null;
            try {
                ex = Native.fn("ibv_query_gid_ex", RdmaH._ibv_query_gid_ex$address(),
                        RdmaH._ibv_query_gid_ex$descriptor());
                table = Native.fn("ibv_query_gid_table", RdmaH._ibv_query_gid_table$address(),
                        RdmaH._ibv_query_gid_table$descriptor());
            } catch (RuntimeException | LinkageError e) {
                missing = e; // jextract's holder fails to initialise when the symbol is absent
                ex = null;
                table = null;
            }
            QUERY_GID_EX = ex;
            QUERY_GID_TABLE = table;
            MISSING = missing;
        }

        private Gid() {
        }

        /** {@return whether libibverbs has both calls} */
        static boolean available() {
            return MISSING == null;
        }

        static Native.Fn queryGidEx() {
            return require(QUERY_GID_EX, "ibv_query_gid_ex");
        }

        static Native.Fn queryGidTable() {
            return require(QUERY_GID_TABLE, "ibv_query_gid_table");
        }

        private static Native.Fn require(Native.Fn fn, String name) {
            if (fn == null) {
                RdmaException e = new RdmaException(name, Errno.EOPNOTSUPP,
                        "libibverbs.so.1 has no _" + name + " (rdma-core 32 or later has)");
                e.initCause(MISSING);
                throw e;
            }
            return fn;
        }
    }
}
