package rdmaflux.verbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import rdmaflux.verbs.ffi.ibv_ah_attr;
import rdmaflux.verbs.ffi.ibv_global_route;

/**
 * Where packets go ({@code struct ibv_ah_attr}): for UD address handles and the primary path of RC/UC QPs.
 * RoCE needs {@code global} with the peer's GID; InfiniBand within a subnet can use the LID alone.
 *
 * @param port local port number
 * @param dlid destination LID (InfiniBand)
 * @param serviceLevel service level
 * @param global whether a GRH is used (always on RoCE)
 * @param dgid destination GID (when global)
 * @param sgidIndex source GID index (when global)
 * @param hopLimit GRH hop limit
 * @param trafficClass GRH traffic class
 * @param flowLabel GRH flow label
 */
public record AddressHandleAttributes(int port, int dlid, int serviceLevel, boolean global, Gid dgid, int sgidIndex,
                                      int hopLimit, int trafficClass, int flowLabel) {

    /** Requires a destination GID for global routes. */
    public AddressHandleAttributes {
        if (global && dgid == null) {
            throw new IllegalArgumentException("a global route needs a destination GID");
        }
        if (port < 1 || port > 255) {
            throw new IllegalArgumentException("port numbers run from 1 to 255, got " + port);
        }
    }

    /**
     * A RoCE-style global route.
     *
     * @param port local port
     * @param dgid destination GID
     * @param sgidIndex source GID index
     * @return the attributes, hop limit 64
     */
    public static AddressHandleAttributes global(int port, Gid dgid, int sgidIndex) {
        return new AddressHandleAttributes(port, 0, 0, true, dgid, sgidIndex, 64, 0, 0);
    }

    void writeTo(MemorySegment ah) {
        ibv_ah_attr.dlid(ah, (short) dlid);
        ibv_ah_attr.sl(ah, (byte) serviceLevel);
        ibv_ah_attr.src_path_bits(ah, (byte) 0);
        ibv_ah_attr.static_rate(ah, (byte) 0);
        ibv_ah_attr.is_global(ah, (byte) (global ? 1 : 0));
        ibv_ah_attr.port_num(ah, (byte) port);
        MemorySegment grh = ibv_ah_attr.grh(ah);
        if (global) {
            dgid.write(grh, ibv_global_route.dgid$offset());
            ibv_global_route.flow_label(grh, flowLabel);
            ibv_global_route.sgid_index(grh, (byte) sgidIndex);
            ibv_global_route.hop_limit(grh, (byte) hopLimit);
            ibv_global_route.traffic_class(grh, (byte) trafficClass);
        }
    }

    MemorySegment toNative(Arena arena) {
        MemorySegment ah = ibv_ah_attr.allocate(arena);
        writeTo(ah);
        return ah;
    }

    static AddressHandleAttributes fromNative(MemorySegment ah) {
        MemorySegment grh = ibv_ah_attr.grh(ah);
        boolean global = ibv_ah_attr.is_global(ah) != 0;
        return new AddressHandleAttributes(Byte.toUnsignedInt(ibv_ah_attr.port_num(ah)),
                Short.toUnsignedInt(ibv_ah_attr.dlid(ah)), Byte.toUnsignedInt(ibv_ah_attr.sl(ah)), global,
                Gid.read(grh, ibv_global_route.dgid$offset()), Byte.toUnsignedInt(ibv_global_route.sgid_index(grh)),
                Byte.toUnsignedInt(ibv_global_route.hop_limit(grh)),
                Byte.toUnsignedInt(ibv_global_route.traffic_class(grh)), ibv_global_route.flow_label(grh));
    }
}
