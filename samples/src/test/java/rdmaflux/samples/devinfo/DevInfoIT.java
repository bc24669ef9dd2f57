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

/** The devinfo sample against rdma-core's own {@code ibv_devinfo} on the real device. */
class DevInfoIT {

    /** Without -v, ibv_devinfo prints nothing we leave out: the outputs must be identical. */
    @Test
    void printsExactlyWhatIbvDevinfoPrints() throws Exception {
        String ours = devinfo();
        String theirs = run("ibv_devinfo");
        System.out.print(ours);
        assertEquals(theirs, ours);
        // Guard against both printing something trivially equal (e.g. nothing).
        Map<String, String> fields = parse(ours);
        String device = RdmaTestEnv.device();
        for (String key : List.of("transport", "node_guid", "sys_image_guid", "phys_port_cnt", "port1/state",
                "port1/port_lmc", "port1/link_layer")) {
            assertTrue(fields.containsKey(device + "/" + key), "devinfo prints " + key + ":\n" + ours);
        }

        assertEquals(run("ibv_devinfo", "-l"), devinfo("-l"));
        assertEquals(run("ibv_devinfo", "-d", device, "-i", "1"), devinfo("-d", device, "-i", "1"));
    }

    @Test
    void verboseOutputIsAFieldForFieldSubsetOfIbvDevinfo() throws Exception {
        String device = RdmaTestEnv.device();
        String addr = RdmaTestEnv.address().getHostAddress();

        String ours = devinfo("-v");
        System.out.print(ours);
        String theirs = run("ibv_devinfo", "-v");

        Map<String, String> mine = parse(ours);
        assertEquals("PORT_ACTIVE (4)", mine.get(device + "/port1/state"), ours);
        assertTrue(mine.containsValue("::ffff:" + addr + ", RoCE v2"),
                "the GID table lists the IPv4-mapped RoCE v2 GID of " + addr + ":\n" + ours);

        Map<String, String> their = parse(theirs);
        // Fields both print must agree exactly; these must be among them so the comparison means something.
        for (String key : List.of("transport", "fw_ver", "node_guid", "sys_image_guid", "phys_port_cnt",
                "vendor_id", "max_qp", "page_size_cap", "device_cap_flags", "device_cap_flags[]", "max_sge_rd",
                "max_res_rd_atom", "atomic_cap", "max_mw", "max_total_mcast_qp_attach", "max_pkeys",
                "local_ca_ack_delay", "num_comp_vectors", "port1/state", "port1/active_mtu", "port1/max_mtu",
                "port1/port_lmc", "port1/link_layer", "port1/gid_tbl_len", "port1/port_cap_flags",
                "port1/port_cap_flags2", "port1/max_vl_num", "port1/sm_sl", "port1/pkey_tbl_len",
                "port1/subnet_timeout", "port1/active_width", "port1/active_speed", "port1/phys_state")) {
            assertTrue(mine.containsKey(device + "/" + key), "devinfo -v prints " + key);
            assertTrue(their.containsKey(device + "/" + key), "ibv_devinfo -v prints " + key);
        }
        int compared = 0;
        for (Map.Entry<String, String> e : mine.entrySet()) {
            assertTrue(their.containsKey(e.getKey()), "ibv_devinfo -v has no " + e.getKey());
            assertEquals(their.get(e.getKey()), e.getValue(), e.getKey());
            compared++;
        }
        // Every GID ibv_devinfo lists is listed by us too, with the same type.
        int gids = 0;
        for (String key : their.keySet()) {
            if (key.contains("/GID[")) {
                assertEquals(their.get(key), mine.get(key), key);
                gids++;
            }
        }
        assertTrue(gids > 0, "ibv_devinfo -v lists no GID:\n" + theirs);

        // And our lines are ibv_devinfo's, in its order: nothing reworded, nothing moved.
        List<String> theirLines = theirs.lines().toList();
        int at = 0;
        for (String line : ours.lines().toList()) {
            int found = theirLines.subList(at, theirLines.size()).indexOf(line);
            assertTrue(found >= 0, "line '" + line + "' is not in ibv_devinfo -v's output after line " + at
                    + ":\n" + theirs);
            at += found + 1;
        }
        System.out.println("devinfo: " + compared + " fields equal to ibv_devinfo -v, " + gids + " GIDs");
    }

    @Test
    void rejectsAnUnknownDevice() {
        StringWriter err = new StringWriter();
        assertEquals(1, new CommandLine(new DevInfo()).setErr(new PrintWriter(err)).execute("-d", "nosuchdev0"));
        assertTrue(err.toString().contains("no device named nosuchdev0"), err.toString());
    }

    private static String devinfo(String... args) {
        StringWriter buf = new StringWriter();
        int rc = new CommandLine(new DevInfo()).setOut(new PrintWriter(buf)).execute(args);
        String out = buf.toString();
        assertEquals(0, rc, out);
        return out;
    }

    /**
     * Reads ibv_devinfo's layout into {@code device/key} and {@code device/portN/key} entries, with the
     * key as printed (e.g. {@code GID[  1]}). The flag names ibv_devinfo prints one per line under a
     * field (e.g. under {@code device_cap_flags}) become {@code key[]}, joined with commas.
     */
    static Map<String, String> parse(String text) {
        Map<String, String> out = new LinkedHashMap<>();
        String device = null;
        String port = null;
        String last = null;
        for (String line : text.split("\n")) {
            String t = line.strip();
            int colon = t.indexOf(':');
            if (t.isEmpty()) {
                continue;
            }
            if (colon < 0) {
                if (last != null && line.startsWith("\t\t\t\t\t")) {
                    out.merge(last + "[]", t, (a, b) -> a + "," + b);
                }
                continue;
            }
            // GID keys contain no colon; GID values do, so split at the first one only.
            String key = t.substring(0, colon).strip();
            String value = t.substring(colon + 1).strip();
            if (key.equals("hca_id")) {
                device = value;
                port = null;
                last = null;
            } else if (device != null && key.equals("port") && line.startsWith("\t\t")) {
                port = "port" + value;
                last = null;
            } else if (device != null) {
                boolean portLevel = line.startsWith("\t\t\t") && port != null;
                last = device + "/" + (portLevel ? port + "/" : "") + key;
                out.put(last, value);
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
