package rdmaflux.cm.internal.util;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/** Finds the {@link VarHandle} of a field for a class's atomic state, from its static initializer. */
public final class FieldHandles {
    private FieldHandles() {
    }

    /**
     * {@return the handle of field {@code name} of {@code owner}}
     *
     * @param lookup the owner's own lookup ({@code MethodHandles.lookup()}), which may reach private fields
     * @param owner the class declaring the field
     * @param name the field
     * @param type its type
     * @throws ExceptionInInitializerError when there is no such field (a defect of the caller)
     */
    public static VarHandle of(MethodHandles.Lookup lookup, Class<?> owner, String name, Class<?> type) {
        try {
            return lookup.findVarHandle(owner, name, type);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
