package rdmaflux.verbs;

import rdmaflux.verbs.ffi.RdmaH;

/**
 * rdma-core functions relinked with errno capture (see {@link Native}).
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

    private Calls() {
    }
}
