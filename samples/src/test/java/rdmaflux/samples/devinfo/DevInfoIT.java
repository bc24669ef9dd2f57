package rdmaflux.samples.devinfo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import picocli.CommandLine;
import rdmaflux.testing.RdmaTestEnv;

/** The devinfo sample against rdma-core's own {@code ibv_devinfo -v} on the real device. */
class DevInfoIT {

    @Test
    void listsTheDeviceLikeIbvDevinfo() throws Exception {
        String device = RdmaTestEnv.device();
        String addr = RdmaTestEnv.address().getHostAddress();

        StringWriter buf = new StringWriter();
        int rc = new CommandLine(new DevInfo()).setOut(new PrintWriter(buf)).execute("-v");
        String ours = buf.toString();
        System.out.print(ours);
        assertEquals(0, rc, ours);

        Map<String, String> mine = parse(ours);
        assertEquals("PORT_ACTIVE (4)", mine.get(device + "/port1/state"), ours);
        assertTrue(mine.containsValue("::ffff:" + addr + ", RoCE v2") || mine.containsValue("::ffff:" + addr),
                "the GID table lists the IPv4-mapped GID of " + addr + ":\n" + ours);

        Map<String, String> theirs = parse(run("ibv_devinfo", "-v"));
        // Fields both print must agree exactly; these must be among them so the comparison means something.
        for (String key : List.of("fw_ver", "node_guid", "phys_port_cnt", "vendor_id", "port1/state",
                "port1/active_mtu", "port1/max_mtu", "port1/link_layer", "port1/gid_tbl_len", "max_qp")) {
            assertTrue(mine.containsKey(device + "/" + key), "devinfo prints " + key);
            assertTrue(theirs.containsKey(device + "/" + key), "ibv_devinfo -v prints " + key);
        }
        int compared = 0;
        for (Map.Entry<String, String> e : mine.entrySet()) {
            assertTrue(theirs.containsKey(e.getKey()), "ibv_devinfo -v has no " + e.getKey());
            assertEquals(theirs.get(e.getKey()), e.getValue(), e.getKey());
            compared++;
        }
        // Every GID ibv_devinfo lists is listed by us too.
        for (String key : theirs.keySet()) {
            if (key.contains("/GID[")) {
                assertEquals(theirs.get(key), mine.get(key), key);
            }
        }
        System.out.println("devinfo: " + compared + " fields equal to ibv_devinfo -v");

        StringWriter listed = new StringWriter();
        assertEquals(0, new CommandLine(new DevInfo()).setOut(new PrintWriter(listed)).execute("-l"));
        assertTrue(listed.toString().contains("\t" + device + "\n"), listed.toString());

        StringWriter err = new StringWriter();
        assertEquals(1, new CommandLine(new DevInfo()).setErr(new PrintWriter(err)).execute("-d", "nosuchdev0"));
        assertTrue(err.toString().contains("no device named nosuchdev0"), err.toString());
    }

    /**
     * Reads ibv_devinfo's layout into {@code device/key} and {@code device/portN/key} entries, with the
     * key as printed (e.g. {@code GID[  1]}).
     */
    static Map<String, String> parse(String text) {
        Map<String, String> out = new LinkedHashMap<>();
        String device = null;
        String port = null;
        for (String line : text.split("\n")) {
            String t = line.strip();
            int colon = t.indexOf(':');
            if (t.isEmpty() || colon < 0) {
                continue;
            }
            // GID keys contain no colon; GID values do, so split at the first one only.
            String key = t.substring(0, colon).strip();
            String value = t.substring(colon + 1).strip();
            if (key.equals("hca_id")) {
                device = value;
                port = null;
            } else if (device != null && key.equals("port") && line.startsWith("\t\t")) {
                port = "port" + value;
            } else if (device != null) {
                boolean portLevel = line.startsWith("\t\t\t") && port != null;
                out.put(device + "/" + (portLevel ? port + "/" : "") + key, value);
            }
        }
        return out;
    }

    private static String run(String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        byte[] bytes = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), String.join(" ", command) + " did not finish");
        String text = new String(bytes, StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), text);
        return text;
    }
}
