package rdmaflux.samples.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.spi.ToolProvider;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The documentation's Java is the compiled Java: every ```java block in README.md and docs/ equals a
 * tagged region of a source file, and the stand-alone programs under docs/examples compile.
 */
class DocSnippetsTest {
    private static final Path ROOT = DocSnippets.findRoot(Path.of(""));

    @Test
    void everyJavaBlockInTheDocsIsItsCompiledSource() {
        List<String> problems = new DocSnippets(ROOT).problems();
        if (!problems.isEmpty()) {
            fail(problems.size() + " documentation snippet problem(s):\n" + String.join("\n", problems));
        }
    }

    @Test
    void theDocsHaveSnippets() {
        DocSnippets snippets = new DocSnippets(ROOT);
        long blocks = snippets.markdownFiles().stream().mapToLong(f -> snippets.blocks(f).size()).sum();
        // README 2, api 2, getting-started 2, metrics 3, multicast 3, verbs 5 when this test was written.
        assertTrue(blocks >= 17, "only " + blocks + " Java blocks found under " + ROOT);
    }

    /** The examples a newcomer runs with the source launcher compile against the samples' class path, warning-free. */
    @Test
    void standAloneExamplesCompile(@TempDir Path out) throws IOException {
        List<Path> sources;
        try (Stream<Path> s = Files.list(ROOT.resolve("docs/examples"))) {
            sources = s.filter(p -> p.toString().endsWith(".java")).sorted().toList();
        }
        assertTrue(sources.contains(ROOT.resolve("docs/examples/HelloRdma.java")), sources.toString());
        ToolProvider javac = ToolProvider.findFirst("javac").orElseThrow(() -> new AssertionError("no javac in this JDK"));
        for (Path source : sources) {
            StringWriter diagnostics = new StringWriter();
            PrintWriter w = new PrintWriter(diagnostics);
            int rc = javac.run(w, w, "-Xlint:all", "-Werror", "-proc:none", "-encoding", "UTF-8",
                    "-cp", System.getProperty("java.class.path"), "-d", out.toString(), source.toString());
            w.flush();
            assertEquals(0, rc, source + " does not compile:\n" + diagnostics);
        }
    }

    @Test
    void regionsDropTagLinesAndCommonIndentation(@TempDir Path root) throws IOException {
        repo(root, "    void m() {\n        // tag::a[]\n        int x = 1;\n        // tag::b[]\n"
                + "        if (x > 0) {\n            x++;\n        }\n        // end::b[]\n\n        return;\n"
                + "        // end::a[]\n    }\n");
        DocSnippets s = new DocSnippets(root);
        assertEquals("int x = 1;\nif (x > 0) {\n    x++;\n}\n\nreturn;", s.region("p/A.java#a"));
        assertEquals("if (x > 0) {\n    x++;\n}", s.region("p/A.java#b"));
        assertTrue(s.region("p/A.java").startsWith("void m() {\n    int x = 1;"), s.region("p/A.java"));
    }

    @Test
    void missingFilesRegionsAndMarkersAreReported(@TempDir Path root) throws IOException {
        repo(root, "// tag::a[]\nint x;\n// end::a[]\n// tag::open[]\n");
        DocSnippets s = new DocSnippets(root);
        assertThrows(IllegalArgumentException.class, () -> s.region("p/Nope.java#a"));
        assertThrows(IllegalArgumentException.class, () -> s.region("p/A.java#nope"));
        assertThrows(IllegalArgumentException.class, () -> s.region("p/A.java#open"));
        Files.writeString(root.resolve("docs/x.md"), "```java\nint x;\n```\n\n<!-- snippet: p/A.java#nope -->\n"
                + "```java\nint x;\n```\n<!-- snippet: p/A.java#a -->\ntext\n");
        List<String> problems = s.problems();
        assertEquals(3, problems.size(), problems.toString());
        assertTrue(problems.get(0).startsWith("docs/x.md:1: a ```java block without"), problems.get(0));
        assertTrue(problems.get(1).contains("no region tag::nope[]"), problems.get(1));
        assertTrue(problems.get(2).contains("not followed by a ```java line"), problems.get(2));
    }

    @Test
    void aStaleBlockIsReportedWithItsDiffAndRewritten(@TempDir Path root) throws IOException {
        repo(root, "// tag::a[]\nint x = 2;\nint y = 3;\n// end::a[]\n");
        Path md = root.resolve("docs/x.md");
        Files.writeString(md, "# T\n\n<!-- snippet: p/A.java#a -->\n```java\nint x = 1;\nint y = 3;\n```\nafter\n");
        DocSnippets s = new DocSnippets(root);
        List<String> problems = s.problems();
        assertEquals(1, problems.size(), problems.toString());
        String p = problems.getFirst();
        assertTrue(p.contains("docs/x.md:4: the block differs from p/A.java#a"), p);
        assertTrue(p.contains("run scripts/doc-snippets"), p);
        assertTrue(p.contains("  - int x = 2;") && p.contains("  + int x = 1;") && p.contains("    int y = 3;"), p);

        assertEquals(List.of(md), s.rewrite());
        assertEquals("# T\n\n<!-- snippet: p/A.java#a -->\n```java\nint x = 2;\nint y = 3;\n```\nafter\n",
                Files.readString(md));
        assertEquals(List.of(), s.problems());
        assertEquals(List.of(), s.rewrite());
    }

    @Test
    void theRootIsFoundFromASubdirectory() {
        assertEquals(ROOT, DocSnippets.findRoot(ROOT.resolve("samples")));
    }

    private static void repo(Path root, String javaSource) throws IOException {
        Files.createDirectories(root.resolve("docs"));
        Files.createDirectories(root.resolve("samples/src/main/java/p"));
        Files.writeString(root.resolve("README.md"), "# r\n");
        Files.writeString(root.resolve("samples/src/main/java/p/A.java"), javaSource);
    }
}
