package rdmaflux.verbs;

import java.util.Set;

import rdmaflux.verbs.ffi.ibv_device_attr;

/**
 * What {@code ibv_query_device} reports, copied: limits to size queues and regions by.
 *
 * <p>The fields rdma-core keeps only for obsolete features (end-to-end contexts, reliable datagram
 * domains, FMRs, raw IPv6/Ethertype QPs), which current kernels always report as 0, are left out.
 *
 * @param firmwareVersion firmware version string
 * @param nodeGuid node GUID, host order
 * @param sysImageGuid system image GUID, host order: equal on all devices of one system (one chassis or
 *                     multi-port adapter), equal to the node GUID on a lone device
 * @param vendorId IEEE vendor id
 * @param vendorPartId vendor part id
 * @param hardwareVersion hardware version
 * @param maxMrSize largest registrable region in bytes
 * @param pageSizeCap supported page sizes, one bit per size (bit n set: 2<sup>n</sup> bytes)
 * @param maxQp queue pairs
 * @param maxQpWr work requests per queue
 * @param deviceCapFlags {@code device_cap_flags}; {@link #capabilities()} decodes them
 * @param maxSge scatter/gather entries per work request
 * @param maxSgeRd scatter/gather entries per RDMA read work request
 * @param maxCq completion queues
 * @param maxCqe entries per completion queue
 * @param maxMr memory regions
 * @param maxPd protection domains
 * @param maxQpRdAtomic outstanding RDMA reads/atomics a QP can be target of
 * @param maxResRdAtomic RDMA read/atomic responder resources of the whole device
 * @param maxQpInitRdAtomic outstanding RDMA reads/atomics a QP can initiate
 * @param atomicCapability 0 none, 1 within the HCA, 2 global
 * @param maxMw memory windows
 * @param maxSrq shared receive queues
 * @param maxSrqWr work requests per SRQ
 * @param maxSrqSge scatter/gather entries per SRQ work request
 * @param maxAh address handles
 * @param maxMulticastGroups multicast groups
 * @param maxMulticastQpAttach QPs per multicast group
 * @param maxTotalMulticastQpAttach QP attachments to multicast groups across the device
 * @param maxPkeys partition keys per port
 * @param localCaAckDelay local CA ack delay (exponent: 4.096 µs × 2<sup>value</sup>); what the
 *                        local ACK timeout of a QP should exceed
 * @param physicalPortCount number of ports (numbered from 1)
 */
public record DeviceAttributes(String firmwareVersion, long nodeGuid, long sysImageGuid, int vendorId,
                               int vendorPartId, int hardwareVersion, long maxMrSize, long pageSizeCap, int maxQp,
                               int maxQpWr, int deviceCapFlags, int maxSge, int maxSgeRd, int maxCq, int maxCqe,
                               int maxMr, int maxPd, int maxQpRdAtomic, int maxResRdAtomic, int maxQpInitRdAtomic,
                               int atomicCapability, int maxMw, int maxSrq, int maxSrqWr, int maxSrqSge, int maxAh,
                               int maxMulticastGroups, int maxMulticastQpAttach, int maxTotalMulticastQpAttach,
                               int maxPkeys, int localCaAckDelay, int physicalPortCount) {

    /** {@return the known bits of {@link #deviceCapFlags()}, in bit order (a new modifiable set)} */
    public Set<DeviceCapability> capabilities() {
        return DeviceCapability.decode(deviceCapFlags);
    }

    /**
     * Tells whether the device reports a capability.
     *
     * @param capability a capability
     * @return whether the device reports it
     */
    public boolean hasCapability(DeviceCapability capability) {
        return (deviceCapFlags & capability.value()) != 0;
    }

    /** {@return a copy of {@code a}, a {@code struct ibv_device_attr} that {@code ibv_query_device} filled} */
    static DeviceAttributes of(java.lang.foreign.MemorySegment a) {
        return new DeviceAttributes(ibv_device_attr.fw_ver(a).getString(0),
                Long.reverseBytes(ibv_device_attr.node_guid(a)),
                Long.reverseBytes(ibv_device_attr.sys_image_guid(a)), ibv_device_attr.vendor_id(a),
                ibv_device_attr.vendor_part_id(a), ibv_device_attr.hw_ver(a), ibv_device_attr.max_mr_size(a),
                ibv_device_attr.page_size_cap(a), ibv_device_attr.max_qp(a), ibv_device_attr.max_qp_wr(a),
                ibv_device_attr.device_cap_flags(a), ibv_device_attr.max_sge(a), ibv_device_attr.max_sge_rd(a),
                ibv_device_attr.max_cq(a), ibv_device_attr.max_cqe(a), ibv_device_attr.max_mr(a),
                ibv_device_attr.max_pd(a), ibv_device_attr.max_qp_rd_atom(a), ibv_device_attr.max_res_rd_atom(a),
                ibv_device_attr.max_qp_init_rd_atom(a), ibv_device_attr.atomic_cap(a), ibv_device_attr.max_mw(a),
                ibv_device_attr.max_srq(a), ibv_device_attr.max_srq_wr(a), ibv_device_attr.max_srq_sge(a),
                ibv_device_attr.max_ah(a), ibv_device_attr.max_mcast_grp(a),
                ibv_device_attr.max_mcast_qp_attach(a), ibv_device_attr.max_total_mcast_qp_attach(a),
                Short.toUnsignedInt(ibv_device_attr.max_pkeys(a)),
                Byte.toUnsignedInt(ibv_device_attr.local_ca_ack_delay(a)),
                Byte.toUnsignedInt(ibv_device_attr.phys_port_cnt(a)));
    }
}
