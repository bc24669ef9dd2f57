package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import rdmaflux.testing.CProgram;
import rdmaflux.verbs.ffi.RdmaH;

/**
 * Checks every {@link NativeConstant} enum of the safe layer against the installed rdma-core
 * headers (through gcc) and against the jextract bindings.
 *
 * <p>The enums are found by scanning the package rather than listed, so a new enum is checked
 * the moment it exists; an unchecked hand-typed value would miscode work requests or misread
 * completions without any error from the kernel.
 */
class NativeConstantsTest {
    private static List<NativeConstant> constants;
    private static Map<String, Long> c;

    @BeforeAll
    static void evaluateWithGcc() throws Exception {
        constants = new ArrayList<>();
        for (Class<? extends NativeConstant> e : nativeConstantEnums()) {
            constants.addAll(List.of(e.getEnumConstants()));
        }

        // Each name once, so the output reads into a map even if two constants share a C name.
        Set<String> names = new LinkedHashSet<>();
        constants.forEach(k -> names.add(k.nativeName()));
        StringBuilder src = new StringBuilder("""
                #include <stdio.h>
                #include "rdmaflux.h"

                int main(void) {
                """);
        for (String name : names) {
            src.append("    printf(\"%s %lld\\n\", \"").append(name).append("\", (long long) ").append(name)
                    .append(");\n");
        }
        src.append("    return 0;\n}\n");

        c = new HashMap<>();
        for (String line : CProgram.of(src.toString()).includeDir(CProgram.rdmafluxHeader().getParent()).run()) {
            String[] f = line.split(" ");
            c.put(f[0], Long.parseLong(f[1]));
        }
    }

    @Test
    void scanFindsTheEnums() {
        // Guards against a scan that finds nothing and lets the other tests pass vacuously.
        List<Class<?>> found = constants.stream().<Class<?>>map(k -> ((Enum<?>) k).getDeclaringClass()).distinct()
                .toList();
        assertTrue(found.contains(SendOpcode.class) && found.contains(WcStatus.class) && found.contains(Mtu.class),
                "enum scan found only " + found);
        // The device-query enums, including the negative UNKNOWN values of ibv_transport_type/ibv_node_type.
        assertTrue(found.containsAll(List.of(Transport.class, NodeType.class, GidType.class, DeviceCapability.class,
                PortCapability.class)), "enum scan found only " + found);
    }

    /** {@code IBV_QPF_GRH_REQUIRED} is a macro over the kernel's uapi enum, so the enum scan cannot see it. */
    @Test
    void grhRequiredFlagMatchesHeader() throws Exception {
        List<String> out = CProgram.of("""
                #include <stdio.h>
                #include "rdmaflux.h"

                int main(void) {
                    printf("%d\\n", (int) IBV_QPF_GRH_REQUIRED);
                    return 0;
                }
                """).includeDir(CProgram.rdmafluxHeader().getParent()).run();
        assertEquals(List.of(Integer.toString(PortAttributes.FLAG_GRH_REQUIRED)), out);
    }

    /** Devices of a kind this version does not know must still list: unknown values decode to UNKNOWN. */
    @Test
    void unknownTransportAndNodeTypeDecodeToUnknown() {
        assertEquals(Transport.UNKNOWN, Transport.of(-1));
        assertEquals(Transport.UNKNOWN, Transport.of(99));
        assertEquals(Transport.IWARP, Transport.of(1));
        assertEquals(NodeType.UNKNOWN, NodeType.of(-1));
        assertEquals(NodeType.UNKNOWN, NodeType.of(0));
        assertEquals(NodeType.CA, NodeType.of(1));
        for (GidType t : GidType.values()) {
            assertEquals(t, GidType.of(t.value()));
        }
    }

    /** Soft-RoCE's device_cap_flags as ibv_devinfo -v prints them (0x01223c76), plus an unknown bit. */
    @Test
    void capabilityMasksDecode() {
        int rxe = 0x01223c76;
        assertEquals(List.of(DeviceCapability.BAD_PKEY_CNTR, DeviceCapability.BAD_QKEY_CNTR,
                DeviceCapability.AUTO_PATH_MIG, DeviceCapability.CHANGE_PHY_PORT,
                DeviceCapability.UD_AV_PORT_ENFORCE, DeviceCapability.PORT_ACTIVE_EVENT,
                DeviceCapability.SYS_IMAGE_GUID, DeviceCapability.RC_RNR_NAK_GEN, DeviceCapability.SRQ_RESIZE,
                DeviceCapability.MEM_WINDOW, DeviceCapability.MEM_MGT_EXTENSIONS,
                DeviceCapability.MEM_WINDOW_TYPE_2B), List.copyOf(DeviceCapability.decode(rxe)));
        assertEquals(0, DeviceCapability.unknownBits(rxe));
        assertEquals(1 << 30, DeviceCapability.unknownBits(rxe | 1 << 30));
        assertEquals(List.of(PortCapability.CM_SUP), List.copyOf(PortCapability.decode(0x00010000)));
    }

    @Test
    void valuesMatchInstalledHeaders() {
        List<String> mismatches = new ArrayList<>();
        for (NativeConstant k : constants) {
            Long native_ = c.get(k.nativeName());
            // value() is an int; a C flag of 1u << 31 arrives here as a positive long long.
            if (native_ == null) {
                mismatches.add(describe(k) + ": missing from the C program's output");
            } else if (native_ != k.value() && native_ != Integer.toUnsignedLong(k.value())) {
                mismatches.add(describe(k) + ": Java " + k.value() + ", C " + native_);
            }
        }
        assertEquals(List.of(), mismatches, mismatches.size() + " of " + constants.size() + " constants differ from C");
    }

    @Test
    void valuesMatchJextractBindings() throws ReflectiveOperationException {
        List<String> mismatches = new ArrayList<>();
        int compared = 0;
        for (NativeConstant k : constants) {
            Method m;
            try {
                m = RdmaH.class.getMethod(k.nativeName());
            } catch (NoSuchMethodException e) {
                continue; // jextract was not asked for this one; gcc has still checked it
            }
            if (!Modifier.isStatic(m.getModifiers())) {
                continue;
            }
            long bound = ((Number) m.invoke(null)).longValue();
            if (bound != k.value()) {
                mismatches.add(describe(k) + ": Java " + k.value() + ", RdmaH." + k.nativeName() + "() " + bound);
            }
            compared++;
        }
        assertTrue(compared > 0, "no NativeConstant has a counterpart in RdmaH");
        assertEquals(List.of(), mismatches, mismatches.size() + " of " + compared + " constants differ from RdmaH");
    }

    /** {@code enum ibv_mtu} encodes 256 &lt;&lt; (value - 1); bytes() is what the path-MTU maths uses. */
    @Test
    void mtuBytesFollowTheIbvMtuEncoding() {
        for (Mtu m : Mtu.values()) {
            assertEquals(256 << (m.value() - 1), m.bytes(), m.name());
            assertEquals(m, Mtu.of(m.value()), m.name());
        }
    }

    private static String describe(NativeConstant k) {
        return ((Enum<?>) k).getDeclaringClass().getSimpleName() + "." + ((Enum<?>) k).name() + " ("
                + k.nativeName() + ")";
    }

    /** Enums implementing NativeConstant anywhere under rdmaflux.verbs, from a directory or a jar. */
    private static List<Class<? extends NativeConstant>> nativeConstantEnums()
            throws IOException, URISyntaxException, ClassNotFoundException {
        Path root = Path.of(NativeConstant.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        String dir = NativeConstant.class.getPackageName().replace('.', '/');
        List<String> classNames;
        if (Files.isDirectory(root)) {
            classNames = classNames(root, root.resolve(dir));
        } else {
            try (FileSystem jar = FileSystems.newFileSystem(root)) {
                classNames = classNames(jar.getPath("/"), jar.getPath("/" + dir));
            }
        }
        List<Class<? extends NativeConstant>> enums = new ArrayList<>();
        for (String name : classNames) {
            // No initialisation: loading the ffi bindings' static state is not needed to ask isEnum.
            Class<?> type = Class.forName(name, false, NativeConstantsTest.class.getClassLoader());
            if (type.isEnum() && NativeConstant.class.isAssignableFrom(type)) {
                enums.add(type.asSubclass(NativeConstant.class));
            }
        }
        return enums;
    }

    private static List<String> classNames(Path root, Path dir) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.map(f -> root.relativize(f).toString())
                    .filter(f -> f.endsWith(".class") && !f.endsWith("module-info.class")
                            && !f.endsWith("package-info.class"))
                    .map(f -> f.substring(0, f.length() - ".class".length()).replace('/', '.'))
                    .sorted()
                    .toList();
        }
    }
}
