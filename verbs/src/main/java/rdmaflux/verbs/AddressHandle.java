package rdmaflux.verbs;

import java.lang.foreign.MemorySegment;

import rdmaflux.verbs.ffi.ibv_ah;

/**
 * An address handle ({@code struct ibv_ah}): the destination of UD sends. A send posted to it holds it until
 * the send's completion is polled (or its QP is destroyed): {@link #close()} meanwhile refuses new sends at
 * once and destroys the handle then ({@link #isDestroyed()}).
 */
public final class AddressHandle extends NativeResource {
    private final AddressHandleAttributes attributes;

    AddressHandle(ProtectionDomain pd, MemorySegment ah, AddressHandleAttributes attributes) {
        super(Rank.AH, ah.reinterpret(ibv_ah.sizeof()), pd, pd.context());
        this.attributes = attributes;
    }

    /** {@return where this handle sends to} */
    public AddressHandleAttributes attributes() {
        return attributes;
    }

    @Override
    void destroy() {
        Calls.IBV_DESTROY_AH.callStatus(handle);
    }

    @Override
    public String toString() {
        return "AddressHandle[" + (attributes.global() ? attributes.dgid() : "lid " + attributes.dlid()) + "]";
    }
}
