package rdmaflux.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * docs/architecture.md's table of which class owns what on which thread, checked against the class docs,
 * which are the source of truth: every class the table names exists, and every implementation class whose
 * doc has a "Threads:" paragraph has a row.
 */
class OwnershipTableTest {
    private static final Path SOURCES = Path.of("src/main/java/rdmaflux/cm");
    private static final Path DOC = Path.of("../docs/architecture.md");
    private static final Pattern NAME = Pattern.compile("`(\\w+)`");

    @Test
    void theTableNamesExistingClassesAndEveryClassWithAThreadParagraph() throws IOException {
        String doc = Files.readString(DOC);
        int from = doc.indexOf("## Which class owns what");
        assertTrue(from >= 0, "the ownership table's heading");
        int to = doc.indexOf("\n## ", from + 5);
        Set<String> named = new TreeSet<>();
        for (String line : doc.substring(from, to < 0 ? doc.length() : to).split("\n")) {
            if (line.startsWith("| `")) {
                Matcher m = NAME.matcher(line.split("\\|")[1]);
                while (m.find()) {
                    named.add(m.group(1));
                }
            }
        }
        Set<String> declared = new TreeSet<>();
        Set<String> withThreads = new TreeSet<>();
        Pattern type = Pattern.compile("\\b(?:class|interface|enum|record)\\s+(\\w+)");
        List<Path> files;
        try (Stream<Path> s = Files.walk(SOURCES)) {
            files = s.filter(p -> p.toString().endsWith(".java")).toList();
        }
        for (Path f : files) {
            String src = Files.readString(f);
            Matcher m = type.matcher(src);
            while (m.find()) {
                declared.add(m.group(1));
            }
            String name = f.getFileName().toString().replace(".java", "");
            if (f.toString().contains("/internal/") && Pattern.compile("<p>Threads?:").matcher(src).find()) {
                withThreads.add(name);
            }
        }
        Set<String> unknown = new TreeSet<>(named);
        unknown.removeAll(declared);
        assertEquals(Set.of(), unknown, "the table names classes that do not exist");
        Set<String> missing = new TreeSet<>(withThreads);
        missing.removeAll(named);
        assertEquals(Set.of(), missing, "classes whose doc states their threads but that have no row");
    }
}
