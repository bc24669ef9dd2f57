package rdmaflux.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import rdmaflux.testing.CProgram;

/** errno values, names and texts, and the exception type chosen for each. */
class ErrnoTest {

    @Test
    void constantsMatchErrnoH() throws Exception {
        List<String> names = new ArrayList<>();
        StringBuilder src = new StringBuilder("#include <errno.h>\n#include <stdio.h>\nint main(void) {\n");
        for (Field f : Errno.class.getFields()) {
            if (Modifier.isStatic(f.getModifiers()) && f.getType() == int.class) {
                names.add(f.getName());
                src.append("  printf(\"%s %d\\n\", \"").append(f.getName()).append("\", ").append(f.getName())
                        .append(");\n");
            }
        }
        src.append("  return 0;\n}\n");
        List<String> out = CProgram.of(src.toString()).run();
        assertEquals(names.size(), out.size());
        for (String line : out) {
            String[] kv = line.split(" ");
            assertEquals(Integer.parseInt(kv[1]), Errno.class.getField(kv[0]).getInt(null), kv[0]);
            assertEquals(kv[0], Errno.name(Integer.parseInt(kv[1])));
        }
    }

    @Test
    void namesAndDescriptionsComeFromLibc() {
        assertEquals("ENODEV", Errno.name(Errno.ENODEV));
        assertEquals("No such device", Errno.describe(Errno.ENODEV));
        assertEquals("errno 4711", Errno.name(4711));
        assertTrue(Errno.describe(4711).contains("4711"));
    }

    @Test
    void exceptionsNameOperationErrnoAndTextAndPickASubtype() {
        RdmaException e = RdmaException.of("rdma_bind_addr", Errno.ENODEV, "no device for 10.0.0.1");
        assertInstanceOf(RdmaNoDeviceException.class, e);
        assertEquals("rdma_bind_addr failed: ENODEV (No such device): no device for 10.0.0.1", e.getMessage());
        assertEquals("rdma_bind_addr", e.operation());
        assertEquals(Errno.ENODEV, e.errno());
        assertEquals("ENODEV", e.errnoName());

        assertInstanceOf(RdmaPermissionException.class, RdmaException.of("ibv_open_device", Errno.EACCES, null));
        assertInstanceOf(RdmaResourceException.class, RdmaException.of("ibv_reg_mr", Errno.ENOMEM, null));
        assertInstanceOf(RdmaTimeoutException.class, RdmaException.of("rdma_resolve_addr", Errno.ETIMEDOUT, null));
        RdmaException plain = RdmaException.of("ibv_modify_qp", Errno.EINVAL, null);
        assertEquals(RdmaException.class, plain.getClass());
        assertEquals("ibv_modify_qp failed: EINVAL (Invalid argument)", plain.getMessage());
        assertNull(new RdmaException("connect", "rejected", null).errnoName());
    }
}
