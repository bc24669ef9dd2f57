package rdmaflux.verbs;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/** Leases on several resources for one native call that references them all (e.g. CQs in ibv_create_qp). */
final class Leases implements AutoCloseable {
    private final List<NativeResource> held = new ArrayList<>(4);

    /** {@return the native handle, or NULL for a null resource} */
    MemorySegment take(NativeResource r) {
        if (r == null) {
            return MemorySegment.NULL;
        }
        MemorySegment h = r.acquire();
        held.add(r);
        return h;
    }

    @Override
    public void close() {
        for (NativeResource r : held) {
            r.release();
        }
        held.clear();
    }
}
