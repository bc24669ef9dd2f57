package rdmaflux.samples.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every relative link in README.md, CHANGELOG.md and docs/**.md points at a file that exists and, for
 * a {@code #fragment} into a markdown file, at a heading of that file (GitHub's anchors: lower case,
 * punctuation dropped, spaces as hyphens, {@code -1}, {@code -2} for repeats). Links with a scheme
 * (https:, mailto:) are not followed.
 */
class DocLinksTest {
    private static final Path ROOT = DocSnippets.findRoot(Path.of(""));
    private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");
    private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.*?)\\s*#*\\s*$");
    private static final Pattern SCHEME = Pattern.compile("^[a-zA-Z][a-zA-Z0-9+.-]*:");

    @Test
    void everyRelativeLinkResolves() {
        List<String> broken = broken(ROOT);
        if (!broken.isEmpty()) {
            fail(broken.size() + " broken link(s):\n" + String.join("\n", broken));
        }
    }

    @Test
    void brokenFilesAndAnchorsAreFound(@TempDir Path root) throws IOException {
        Files.createDirectories(root.resolve("docs"));
        Files.writeString(root.resolve("README.md"), "# r\n\n[ok](docs/a.md#the-ibv_wr_-rows) [gone](docs/b.md)\n"
                + "[web](https://example.org/x) [self](#r)\n");
        Files.writeString(root.resolve("docs/a.md"), "# A\n\n## The `ibv_wr_*` rows\n\n## Twice\n\n## Twice\n\n"
                + "[up](../README.md#r) [dup](#twice-1) [no](#nowhere)\n```\n[in code](missing.md)\n```\n");
        List<String> broken = broken(root);
        assertEquals(List.of("README.md: docs/b.md: no such file", "docs/a.md: #nowhere: no such heading in docs/a.md"),
                broken);
    }

    @Test
    void anchorsFollowGitHub() {
        assertEquals("the-extended-post-api-ibv_wr_-rows", anchor("The extended post API (`ibv_wr_*`) rows"));
        assertEquals("block-on-a-loop-thread", anchor("`block()` on a loop thread"));
        assertEquals("what-affects-the-rate-of-rdma-readwrite", anchor("What affects the rate of RDMA read/write"));
        assertTrue(anchor("Send, receive and release").equals("send-receive-and-release"));
    }

    static List<String> broken(Path root) {
        List<Path> files = new ArrayList<>(List.of(root.resolve("README.md"), root.resolve("CHANGELOG.md")));
        try (Stream<Path> s = Files.walk(root.resolve("docs"))) {
            s.filter(p -> p.toString().endsWith(".md")).sorted().forEach(files::add);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Map<Path, Set<String>> anchors = new HashMap<>();
        List<String> out = new ArrayList<>();
        for (Path file : files) {
            if (!Files.isRegularFile(file)) {
                continue;
            }
            String rel = root.relativize(file).toString().replace('\\', '/');
            for (String link : links(file)) {
                if (SCHEME.matcher(link).find()) {
                    continue;
                }
                int hash = link.indexOf('#');
                String path = hash < 0 ? link : link.substring(0, hash);
                String fragment = hash < 0 ? null : link.substring(hash + 1);
                Path target = path.isEmpty() ? file : file.getParent().resolve(path).normalize();
                if (!Files.exists(target)) {
                    out.add(rel + ": " + link + ": no such file");
                } else if (fragment != null && target.toString().endsWith(".md")
                        && !anchors.computeIfAbsent(target, DocLinksTest::anchors).contains(fragment)) {
                    out.add(rel + ": " + link + ": no such heading in " + root.relativize(target).toString().replace('\\', '/'));
                }
            }
        }
        return out;
    }

    private static List<String> links(Path file) {
        List<String> out = new ArrayList<>();
        boolean fenced = false;
        for (String line : lines(file)) {
            if (line.stripLeading().startsWith("```")) {
                fenced = !fenced;
            } else if (!fenced) {
                Matcher m = LINK.matcher(line);
                while (m.find()) {
                    out.add(m.group(1));
                }
            }
        }
        return out;
    }

    private static Set<String> anchors(Path file) {
        Set<String> out = new HashSet<>();
        Map<String, Integer> seen = new HashMap<>();
        boolean fenced = false;
        for (String line : lines(file)) {
            if (line.stripLeading().startsWith("```")) {
                fenced = !fenced;
                continue;
            }
            Matcher m = HEADING.matcher(line);
            if (!fenced && m.matches()) {
                String a = anchor(m.group(1));
                int n = seen.merge(a, 1, Integer::sum) - 1;
                out.add(n == 0 ? a : a + "-" + n);
            }
        }
        return out;
    }

    /** GitHub's anchor of a heading: lower case, every character but letters, digits, '_', '-' and ' ' dropped. */
    static String anchor(String heading) {
        return heading.strip().toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{Nd}_\\- ]", "").replace(' ', '-');
    }

    private static List<String> lines(Path file) {
        try {
            return Files.readAllLines(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
