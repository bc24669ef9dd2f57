package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.PaddingLayout;
import java.lang.foreign.SequenceLayout;
import java.lang.foreign.UnionLayout;
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
import rdmaflux.verbs.ffi.ibv_context_ops;
import rdmaflux.verbs.ffi.ibv_device;
import rdmaflux.verbs.ffi.ibv_device_attr;
import rdmaflux.verbs.ffi.ibv_gid_entry;
import rdmaflux.verbs.ffi.ibv_port_attr;
import rdmaflux.verbs.ffi.ibv_recv_wr;
import rdmaflux.verbs.ffi.ibv_send_wr;
import rdmaflux.verbs.ffi.ibv_wc;
import rdmaflux.verbs.ffi.rdma_cm_id;
import rdmaflux.verbs.ffi.verbs_context;

/**
 * Checks every jextract layout in {@code rdmaflux.verbs.ffi} against what gcc computes from the
 * installed rdma-core headers.
 *
 * <p>The safe layer reads completions and writes work requests at these offsets with no native
 * cross-check; a layout that drifts from the headers (another rdma-core version, a regenerated
 * binding, a hand edit) would corrupt work requests silently, so this test must see every struct,
 * not a sample.
 */
class LayoutTest {
    private static final String FFI_PACKAGE = "rdmaflux.verbs.ffi";

    /**
     * Members that gcc cannot take {@code offsetof} of. jextract renders C bitfields as padding,
     * which the walk skips anyway; this list is for a named member that should still be exempt.
     * The structs bound for rdma-core 44 have none, and a stale entry fails the test.
     */
    private static final Set<String> BITFIELDS = Set.of();

    /** A named C member reached through a path of layout elements. */
    private record Member(String cPath, long offset, long size, long alignment) {}

    /** One generated struct/union class and the C type it mirrors. */
    private record Struct(String className, String cType, GroupLayout layout, List<Member> members) {}

    private static List<Struct> structs;
    private static List<String> unmapped;
    private static Map<String, Long> c;

    @BeforeAll
    static void measureWithGcc() throws Exception {
        structs = new ArrayList<>();
        unmapped = new ArrayList<>();
        for (String name : topLevelClassNames()) {
            Class<?> type = Class.forName(FFI_PACKAGE + "." + name, false, LayoutTest.class.getClassLoader());
            GroupLayout layout = layoutOf(type);
            if (layout == null) {
                unmapped.add(name);
                continue;
            }
            List<Member> members = new ArrayList<>();
            walk(layout, layout, List.of(), "", members);
            structs.add(new Struct(name, cType(name, layout), layout, members));
        }

        StringBuilder src = new StringBuilder("""
                #include <stddef.h>
                #include <stdio.h>
                #include "rdmaflux.h"

                int main(void) {
                """);
        for (Struct s : structs) {
            print(src, key("sizeof", s, ""), "sizeof(" + s.cType + ")");
            print(src, key("alignof", s, ""), "_Alignof(" + s.cType + ")");
            for (Member m : s.members) {
                if (BITFIELDS.contains(s.className + "." + m.cPath)) {
                    continue;
                }
                String member = "((" + s.cType + " *) 0)->" + m.cPath;
                print(src, key("offsetof", s, m.cPath), "offsetof(" + s.cType + ", " + m.cPath + ")");
                print(src, key("sizeof", s, m.cPath), "sizeof(" + member + ")");
                print(src, key("alignof", s, m.cPath), "__alignof__(" + member + ")");
            }
        }
        src.append("    return 0;\n}\n");

        c = new HashMap<>();
        for (String line : CProgram.of(src.toString()).includeDir(CProgram.rdmafluxHeader().getParent()).run()) {
            int tab = line.lastIndexOf('\t');
            c.put(line.substring(0, tab), Long.parseLong(line.substring(tab + 1)));
        }
    }

    @Test
    void everyGeneratedClassExceptFunctionPointersHasALayout() {
        assertTrue(structs.size() >= 5, "package scan found only " + structs.size() + " layouts");
        // A class the walk cannot read would otherwise drop out of the comparison unnoticed.
        List<String> bad = unmapped.stream().filter(n -> !isFunctionPointerClass(n)).toList();
        assertEquals(List.of(), bad, "generated classes with neither layout() nor a nested Function");
    }

    @Test
    void structSizesAndAlignmentsMatchC() {
        List<String> mismatches = new ArrayList<>();
        for (Struct s : structs) {
            compare(mismatches, key("sizeof", s, ""), s.layout.byteSize());
            compare(mismatches, key("alignof", s, ""), s.layout.byteAlignment());
        }
        assertEquals(List.of(), mismatches, mismatches.size() + " of " + structs.size() + " structs differ from gcc");
    }

    @Test
    void memberOffsetsSizesAndAlignmentsMatchC() {
        List<String> mismatches = new ArrayList<>();
        Set<String> seenBitfields = new LinkedHashSet<>();
        int checked = 0;
        for (Struct s : structs) {
            assertFalse(s.members.isEmpty(), s.className + " has no named members to check");
            for (Member m : s.members) {
                if (BITFIELDS.contains(s.className + "." + m.cPath)) {
                    seenBitfields.add(s.className + "." + m.cPath);
                    continue;
                }
                compare(mismatches, key("offsetof", s, m.cPath), m.offset);
                compare(mismatches, key("sizeof", s, m.cPath), m.size);
                compare(mismatches, key("alignof", s, m.cPath), m.alignment);
                checked++;
            }
        }
        assertEquals(BITFIELDS, seenBitfields, "stale BITFIELDS entries");
        assertTrue(checked > structs.size(), "only " + checked + " members checked");
        assertEquals(List.of(), mismatches, mismatches.size() + " member mismatches in " + checked + " members");
    }

    /** The structs the hot path indexes by hand; a wrong size here shifts every array element. */
    @Test
    void knownSizes() {
        Map<String, Long> expected = Map.of(
                "struct ibv_wc", 48L,
                "struct ibv_send_wr", 128L,
                "struct ibv_recv_wr", 32L,
                "struct ibv_context_ops", 256L,
                "struct rdma_cm_id", 416L);
        assertEquals(48, ibv_wc.layout().byteSize(), "ibv_wc");
        assertEquals(128, ibv_send_wr.layout().byteSize(), "ibv_send_wr");
        assertEquals(32, ibv_recv_wr.layout().byteSize(), "ibv_recv_wr");
        assertEquals(256, ibv_context_ops.layout().byteSize(), "ibv_context_ops");
        assertEquals(416, rdma_cm_id.layout().byteSize(), "rdma_cm_id");
        expected.forEach((type, size) -> assertEquals(size, c.get("sizeof\t" + type + "\t"), "gcc sizeof(" + type + ")"));
    }

    /** Anonymous members are where the C path and the layout path part ways; pin a few by hand. */
    @Test
    void anonymousMembersAreReachableByTheirCNames() {
        assertEquals(c.get("offsetof\tstruct ibv_wc\timm_data"), ibv_wc.imm_data$offset());
        assertEquals(c.get("offsetof\tstruct ibv_send_wr\twr.rdma.remote_addr"),
                ibv_send_wr.layout().byteOffset(PathElement.groupElement("wr"), PathElement.groupElement("rdma"),
                        PathElement.groupElement("remote_addr")));
        assertTrue(c.containsKey("offsetof\tstruct rdma_addr\tsrc_sin.sin_port"), "rdma_addr.src_sin not checked");
        assertTrue(c.containsKey("offsetof\tunion ibv_gid\tglobal.interface_id"), "ibv_gid.global not checked");
        assertTrue(c.containsKey("offsetof\tstruct rdma_cm_event\tparam.conn.qp_num"), "rdma_cm_event.param not checked");
        assertTrue(c.containsKey("offsetof\tstruct ibv_async_event\telement.qp"), "ibv_async_event.element not checked");
        assertTrue(c.containsKey("sizeof\tpthread_mutex_t\t"), "typedef-only pthread_mutex_t not checked");
    }

    /**
     * The device queries pass {@code sizeof(struct ibv_gid_entry)} and {@code sizeof(struct ibv_port_attr)}
     * to rdma-core and find {@code verbs_context} by subtracting the offset of its {@code context}: the
     * library trusts those numbers, so pin them to gcc's by name (the scan above covers them too).
     */
    @Test
    void deviceQueryLayoutsMatchC() {
        assertEquals(c.get("sizeof\tstruct ibv_gid_entry\t"), ibv_gid_entry.sizeof());
        assertEquals(c.get("offsetof\tstruct ibv_gid_entry\tgid_type"), ibv_gid_entry.gid_type$offset());
        assertEquals(c.get("sizeof\tstruct ibv_port_attr\t"), ibv_port_attr.sizeof());
        assertEquals(c.get("offsetof\tstruct ibv_port_attr\tport_cap_flags2"), ibv_port_attr.port_cap_flags2$offset());
        assertEquals(c.get("offsetof\tstruct verbs_context\tcontext"), verbs_context.context$offset());
        assertEquals(c.get("offsetof\tstruct verbs_context\tsz"), verbs_context.sz$offset());
        assertEquals(c.get("sizeof\tstruct verbs_context\t"), verbs_context.sizeof());
        assertEquals(c.get("offsetof\tstruct ibv_device\ttransport_type"), ibv_device.transport_type$offset());
        assertEquals(c.get("offsetof\tstruct ibv_device_attr\tsys_image_guid"),
                ibv_device_attr.sys_image_guid$offset());
    }

    private static void compare(List<String> mismatches, String key, long java) {
        Long gcc = c.get(key);
        if (gcc == null) {
            mismatches.add(key.replace('\t', ' ') + ": missing from the C program's output");
        } else if (gcc != java) {
            mismatches.add(key.replace('\t', ' ') + ": Java " + java + ", gcc " + gcc);
        }
    }

    private static String key(String what, Struct s, String cPath) {
        return what + "\t" + s.cType + "\t" + cPath;
    }

    private static void print(StringBuilder src, String key, String expr) {
        src.append("    printf(\"%s\\t%zu\\n\", \"").append(key.replace("\t", "\\t")).append("\", (size_t) (")
                .append(expr).append("));\n");
    }

    /**
     * Records every named member, recursing into nested groups. jextract names an anonymous C
     * union/struct {@code $anon$LINE:COL}; C reaches its members as if they belonged to the
     * enclosing type, so that component is left out of the C path (but kept in the layout path).
     */
    private static void walk(GroupLayout root, GroupLayout group, List<PathElement> path, String cPath,
            List<Member> out) {
        List<MemoryLayout> members = group.memberLayouts();
        for (int i = 0; i < members.size(); i++) {
            MemoryLayout m = members.get(i);
            if (m instanceof PaddingLayout) {
                continue;
            }
            String name = m.name().orElse(null);
            boolean anonymous = name == null || name.startsWith("$anon$");
            if (anonymous && !(m instanceof GroupLayout)) {
                fail(root.name().orElse("?") + ": unnamed non-group member " + m + " at " + path);
            }
            List<PathElement> p = append(path, PathElement.groupElement(i));
            String memberPath = anonymous ? cPath : join(cPath, name);
            if (!anonymous) {
                out.add(new Member(memberPath, root.byteOffset(p.toArray(PathElement[]::new)), m.byteSize(),
                        m.byteAlignment()));
            }
            // Arrays of structs: element 0 stands for all, the stride being checked by sizeof.
            MemoryLayout element = m;
            while (element instanceof SequenceLayout seq) {
                p = append(p, PathElement.sequenceElement(0));
                memberPath += "[0]";
                element = seq.elementLayout();
            }
            if (element instanceof GroupLayout g) {
                walk(root, g, p, memberPath, out);
            }
        }
    }

    private static List<PathElement> append(List<PathElement> path, PathElement e) {
        List<PathElement> p = new ArrayList<>(path);
        p.add(e);
        return p;
    }

    private static String join(String prefix, String name) {
        return prefix.isEmpty() ? name : prefix + "." + name;
    }

    /**
     * The C spelling of the type. jextract names a class after the struct tag, so a tagged layout
     * is {@code struct tag} / {@code union tag}; a typedef of an anonymous type (e.g.
     * {@code pthread_mutex_t}) has an {@code $anon$} layout and only the typedef name in C.
     */
    private static String cType(String className, GroupLayout layout) {
        String name = layout.name().orElse("$anon$");
        if (name.startsWith("$anon$")) {
            return className;
        }
        return (layout instanceof UnionLayout ? "union " : "struct ") + name;
    }

    private static GroupLayout layoutOf(Class<?> type) throws ReflectiveOperationException {
        Method m;
        try {
            m = type.getMethod("layout");
        } catch (NoSuchMethodException e) {
            return null;
        }
        if (!Modifier.isStatic(m.getModifiers()) || !GroupLayout.class.isAssignableFrom(m.getReturnType())) {
            return null;
        }
        return (GroupLayout) m.invoke(null);
    }

    private static boolean isFunctionPointerClass(String name) {
        try {
            Class.forName(FFI_PACKAGE + "." + name + "$Function", false, LayoutTest.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    /** Top-level classes of the ffi package, from a classes directory or a jar alike. */
    private static List<String> topLevelClassNames() throws IOException, URISyntaxException {
        Path root = Path.of(RdmaH.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        String dir = FFI_PACKAGE.replace('.', '/');
        if (Files.isDirectory(root)) {
            return list(root.resolve(dir));
        }
        try (FileSystem jar = FileSystems.newFileSystem(root)) {
            return list(jar.getPath("/" + dir));
        }
    }

    private static List<String> list(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(f -> f.getFileName().toString())
                    .filter(f -> f.endsWith(".class") && !f.contains("$"))
                    .map(f -> f.substring(0, f.length() - ".class".length()))
                    .filter(n -> !n.startsWith("RdmaH"))
                    .sorted()
                    .toList();
        }
    }
}
