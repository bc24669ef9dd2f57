package rdmaflux.verbs;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;

/**
 * A provider function reached through a function pointer (what verbs.h's static inline functions call),
 * linked with errno capture once per address: every context of one provider has the same pointers, so
 * linking costs once, not per call. Part of the native core: {@link ProviderCalls} holds one per function.
 */
final class LinkedOp {
    private final String name;
    private final FunctionDescriptor descriptor;
    private volatile Linked last;

    private record Linked(long address, Native.Fn fn) {
    }

    /**
     * @param name the C function the pointer stands for, for error messages
     * @param descriptor its descriptor, from the generated function-pointer class
     */
    LinkedOp(String name, FunctionDescriptor descriptor) {
        this.name = name;
        this.descriptor = descriptor;
    }

    /** {@return the function at {@code pointer}, linked; the pointer must not be NULL} */
    Native.Fn at(MemorySegment pointer) {
        Linked l = last;
        if (l == null || l.address() != pointer.address()) {
            l = new Linked(pointer.address(), Native.fn(name, pointer, descriptor));
            last = l;
        }
        return l.fn();
    }
}
