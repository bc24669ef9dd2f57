package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassModel;
import java.lang.classfile.constantpool.ClassEntry;
import java.lang.classfile.constantpool.MemberRefEntry;
import java.lang.classfile.constantpool.PoolEntry;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * The native gate: only the native core links or calls native functions; every other class of
 * {@code rdmaflux.verbs} calls through it, as netty's io_uring transport calls through its one
 * {@code Native} class. Checked on the compiled classes' constant pools, so a call written any way
 * (direct, method reference, lambda) is seen.
 */
class NativeGateTest {
    /** The native core, by top-level class name; nested classes belong to their top-level class. */
    static final Set<String> CORE = Set.of("Native", "Calls", "CmCalls", "ProviderCalls", "LinkedOp", "Posix");

    private static final String FFI = "rdmaflux/verbs/ffi/";
    private static final String RDMA_H = FFI + "RdmaH";
    private static final Set<String> HANDLE_INVOKERS = Set.of("invoke", "invokeExact", "invokeWithArguments");
    /** The core's own means to link or to call a handle exactly, which would be a route around it. */
    private static final Set<String> CORE_LINKING = Set.of("rdmaflux/verbs/Native.fn", "rdmaflux/verbs/Native.libc",
            "rdmaflux/verbs/Native.capture", "rdmaflux/verbs/Native.errno", "rdmaflux/verbs/Native$Fn.handle",
            "rdmaflux/verbs/Native$Fn.spreader");

    @Test
    void onlyTheNativeCoreCallsNativeFunctions() {
        Map<String, List<String>> outside = new TreeMap<>(nativeReferences());
        outside.keySet().removeIf(c -> CORE.contains(topLevel(c)));
        assertEquals(Map.of(), outside, "classes outside the native core " + CORE + " that link or call native"
                + " functions themselves: call through the core instead (a typed method there, throwing"
                + " RdmaException with the operation and errno)");
    }

    @Test
    void theCheckSeesEveryRouteTheCoreUses() {
        Map<String, List<String>> refs = nativeReferences();
        // Each route the rule forbids elsewhere, found where the core takes it: a check that finds nothing
        // would pass for any code.
        assertTrue(has(refs, "Native", "java/lang/foreign/Linker.downcallHandle"), refs::toString);
        assertTrue(has(refs, "Calls", RDMA_H + ".ibv_ack_cq_events"), refs::toString);
        assertTrue(has(refs, "Calls", RDMA_H + ".ibv_open_device$address"), refs::toString);
        assertTrue(has(refs, "ProviderCalls", FFI + "ibv_qp_ex$wr_send.invoke"), refs::toString);
        assertTrue(has(refs, "CmCalls", "java/lang/invoke/MethodHandle.invokeExact"), refs::toString);
        assertTrue(has(refs, "CmCalls", "rdmaflux/verbs/Native$Fn.handle"), refs::toString);
        // Constants of the generated class are no calls.
        assertTrue(refs.values().stream().flatMap(List::stream).noneMatch(r -> r.endsWith(".IBV_QP_INIT_ATTR_PD")),
                refs::toString);
    }

    private static boolean has(Map<String, List<String>> refs, String coreClass, String ref) {
        return refs.entrySet().stream()
                .anyMatch(e -> topLevel(e.getKey()).equals(coreClass) && e.getValue().contains(ref));
    }

    private static String topLevel(String internalName) {
        String simple = internalName.substring(internalName.lastIndexOf('/') + 1);
        int nested = simple.indexOf('$');
        return nested < 0 ? simple : simple.substring(0, nested);
    }

    /** Per class of rdmaflux.verbs (not ffi), the references by which it links or calls native code. */
    private static Map<String, List<String>> nativeReferences() {
        Set<String> downcalls = rdmaHDowncalls();
        Path dir = classesDir().resolve("rdmaflux/verbs");
        Map<String, List<String>> out = new TreeMap<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".class")).sorted().toList()) {
                ClassModel model = ClassFile.of().parse(Files.readAllBytes(f));
                List<String> refs = new ArrayList<>();
                for (PoolEntry e : model.constantPool()) {
                    String ref = nativeReference(e, downcalls);
                    if (ref != null && !refs.contains(ref)) {
                        refs.add(ref);
                    }
                }
                if (!refs.isEmpty()) {
                    out.put(model.thisClass().asInternalName(), refs);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        assertTrue(out.size() >= CORE.size(), "found too few classes under " + dir + ": " + out.keySet());
        return out;
    }

    /** {@return the reference if {@code e} links or calls native code, else null} */
    private static String nativeReference(PoolEntry e, Set<String> rdmaHDowncalls) {
        if (e instanceof ClassEntry c && c.asInternalName().startsWith("java/lang/foreign/Linker")) {
            return c.asInternalName();
        }
        if (!(e instanceof MemberRefEntry m)) {
            return null;
        }
        String owner = m.owner().asInternalName();
        String name = m.name().stringValue();
        String ref = owner + "." + name;
        boolean linking = owner.startsWith("java/lang/foreign/Linker");
        boolean invokesHandle = owner.equals("java/lang/invoke/MethodHandle") && HANDLE_INVOKERS.contains(name);
        boolean generatedDowncall = owner.startsWith(RDMA_H) && (rdmaHDowncalls.contains(name) || name.contains("$"));
        // The generated classes of function pointers (ibv_qp_ex.wr_send, ...) call through their invoke.
        boolean functionPointer = owner.startsWith(FFI) && name.equals("invoke");
        return linking || invokesHandle || generatedDowncall || functionPointer || CORE_LINKING.contains(ref)
                ? ref : null;
    }

    /**
     * The functions of the generated RdmaH, as opposed to its constants: jextract gives each function a
     * {@code name$handle}. Read by reflection without initialising RdmaH, which would load rdma-core.
     */
    private static Set<String> rdmaHDowncalls() {
        try {
            Class<?> rdmaH = Class.forName("rdmaflux.verbs.ffi.RdmaH", false, NativeGateTest.class.getClassLoader());
            Set<String> functions = Arrays.stream(rdmaH.getMethods()).map(Method::getName)
                    .filter(n -> n.endsWith("$handle"))
                    .map(n -> n.substring(0, n.length() - "$handle".length()))
                    .collect(Collectors.toSet());
            assertTrue(functions.contains("ibv_ack_cq_events"), "no functions found in " + rdmaH);
            return functions;
        } catch (ClassNotFoundException e) {
            throw new AssertionError(e);
        }
    }

    private static Path classesDir() {
        try {
            Path p = Path.of(Native.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            assertTrue(Files.isDirectory(p), "the check reads the compiled classes from a directory, got " + p);
            return p;
        } catch (URISyntaxException e) {
            throw new AssertionError(e);
        }
    }
}
