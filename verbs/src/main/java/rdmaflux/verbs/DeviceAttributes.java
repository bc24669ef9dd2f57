package rdmaflux.verbs;

/**
 * What {@code ibv_query_device} reports, copied: limits to size queues and regions by.
 *
 * @param firmwareVersion firmware version string
 * @param nodeGuid node GUID, host order
 * @param vendorId IEEE vendor id
 * @param vendorPartId vendor part id
 * @param hardwareVersion hardware version
 * @param maxMrSize largest registrable region in bytes
 * @param maxQp queue pairs
 * @param maxQpWr work requests per queue
 * @param maxSge scatter/gather entries per work request
 * @param maxCq completion queues
 * @param maxCqe entries per completion queue
 * @param maxMr memory regions
 * @param maxPd protection domains
 * @param maxQpRdAtomic outstanding RDMA reads/atomics a QP can be target of
 * @param maxQpInitRdAtomic outstanding RDMA reads/atomics a QP can initiate
 * @param atomicCapability 0 none, 1 within the HCA, 2 global
 * @param maxSrq shared receive queues
 * @param maxSrqWr work requests per SRQ
 * @param maxSrqSge scatter/gather entries per SRQ work request
 * @param maxAh address handles
 * @param maxMulticastGroups multicast groups
 * @param maxMulticastQpAttach QPs per multicast group
 * @param physicalPortCount number of ports (numbered from 1)
 */
public record DeviceAttributes(String firmwareVersion, long nodeGuid, int vendorId, int vendorPartId,
                               int hardwareVersion, long maxMrSize, int maxQp, int maxQpWr, int maxSge, int maxCq,
                               int maxCqe, int maxMr, int maxPd, int maxQpRdAtomic, int maxQpInitRdAtomic,
                               int atomicCapability, int maxSrq, int maxSrqWr, int maxSrqSge, int maxAh,
                               int maxMulticastGroups, int maxMulticastQpAttach, int physicalPortCount) {
}
