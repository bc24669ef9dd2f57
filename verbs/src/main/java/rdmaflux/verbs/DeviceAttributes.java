package rdmaflux.verbs;

import java.util.Set;

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
}
