import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * Says why two jars (zip files) that should be byte-identical are not: entries only in one, entries in
 * another order, and per entry a different content, time, size, comment or extra field. Used by
 * scripts/reproducible: {@code java scripts/lib/JarDiff.java A.jar B.jar}. Exit 0 when it found a
 * difference to report, 1 when the entries look the same (then the zip headers themselves differ).
 */
public final class JarDiff {
    private JarDiff() {
    }

    public static void main(String[] args) throws IOException {
        Map<String, ZipEntry> a = entries(Path.of(args[0]));
        Map<String, ZipEntry> b = entries(Path.of(args[1]));
        List<String> found = new ArrayList<>();
        a.keySet().stream().filter(n -> !b.containsKey(n)).forEach(n -> found.add("only in the first: " + n));
        b.keySet().stream().filter(n -> !a.containsKey(n)).forEach(n -> found.add("only in the second: " + n));
        List<String> orderA = a.keySet().stream().filter(b::containsKey).toList();
        List<String> orderB = b.keySet().stream().filter(a::containsKey).toList();
        if (!orderA.equals(orderB)) {
            found.add("entries in another order");
        }
        try (ZipFile za = new ZipFile(args[0]); ZipFile zb = new ZipFile(args[1])) {
            for (String n : orderA) {
                ZipEntry ea = a.get(n);
                ZipEntry eb = b.get(n);
                if (!Arrays.equals(bytes(za, ea), bytes(zb, eb))) {
                    found.add(n + ": content differs (" + ea.getSize() + " vs " + eb.getSize() + " bytes)");
                }
                if (ea.getTime() != eb.getTime()) {
                    found.add(n + ": time " + ea.getLastModifiedTime() + " vs " + eb.getLastModifiedTime());
                }
                if (ea.getMethod() != eb.getMethod() || ea.getCompressedSize() != eb.getCompressedSize()) {
                    found.add(n + ": compressed differently");
                }
                if (!Arrays.equals(ea.getExtra(), eb.getExtra())) {
                    found.add(n + ": extra field (times, permissions) differs");
                }
            }
        }
        found.forEach(f -> System.out.println("  " + f));
        System.exit(found.isEmpty() ? 1 : 0);
    }

    private static Map<String, ZipEntry> entries(Path jar) throws IOException {
        Map<String, ZipEntry> map = new LinkedHashMap<>();
        try (ZipFile z = new ZipFile(jar.toFile())) {
            z.stream().forEach(e -> map.put(e.getName(), e));
        }
        return map;
    }

    private static byte[] bytes(ZipFile z, ZipEntry e) throws IOException {
        try (InputStream in = z.getInputStream(e)) {
            return in.readAllBytes();
        }
    }
}
