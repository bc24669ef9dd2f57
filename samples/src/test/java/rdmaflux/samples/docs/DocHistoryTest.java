package rdmaflux.samples.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * README.md and the guides under docs/ say what is, not how it came to be: history belongs in
 * CHANGELOG.md and the commits. This test fails on the phrases that narrate it (the date of a run, "this
 * session", "before this change", "for the record", a run at a clock time, a commit named as the point
 * where something changed). Two places may carry dates by design: CHANGELOG.md (not scanned) and
 * docs/benchmarks.md's results, which record what run produced them: the blocks {@code scripts/bench}
 * writes between {@code <!-- bench-results...:begin -->} and {@code :end -->} markers (and the JMH
 * results' {@code jmh-results} block), and the rows of its tables (lines starting with {@code |}).
 * The files under docs/benchmarks/ are {@code scripts/bench}'s output, not guides, and are not scanned.
 * Fenced code blocks are skipped: they show code and its output, not narration.
 */
class DocHistoryTest {
    private static final Path ROOT = DocSnippets.findRoot(Path.of(""));

    private static final String MONTH = "(?:January|February|March|April|May|June|July|August|September"
            + "|October|November|December)";

    /** Each pattern with what it catches, for the failure message. Case-insensitive unless the month names. */
    private static final List<Rule> RULES = List.of(
            new Rule("an ISO date", Pattern.compile("\\b20\\d\\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\\d|3[01])(?!\\d)")),
            new Rule("a calendar date", Pattern.compile("\\b" + MONTH + " (?:[1-9]|[12]\\d|3[01])(?:st|nd|rd|th)?\\b"
                    + "|\\b(?:[1-9]|[12]\\d|3[01]) " + MONTH + "\\b")),
            new Rule("a session", ci("\\b(?:this|that|the previous|the last|the next|an earlier|a later|a previous)"
                    + " session\\b|\\bsession before\\b")),
            new Rule("a before/after", ci("\\b(?:before|after|since|until) (?:this|that|the) change\\b"
                    + "|\\bbefore/after\\b")),
            new Rule("\"for the record\"", ci("\\bfor the record\\b")),
            new Rule("a time of day", ci("\\b(?:this|that|yesterday|the same) (?:morning|afternoon|evening|night)\\b"
                    + "|\\bthe (?:morning|afternoon|evening)'s\\b|\\byesterday\\b|\\b(?:earlier|later) today\\b"
                    + "|\\b(?:until|up to|as of) (?:now|today)\\b")),
            new Rule("a run at a clock time", ci("\\b(?:run|runs|measured|started|ended|at|of|from|until) "
                    + "(?:[01]?\\d|2[0-3]):[0-5]\\d(?![\\d:])")),
            new Rule("a commit as a point in time", ci("\\b(?:commit|main|revision) `?[0-9a-f]{7,40}\\b"
                    + "|\\b(?:on|at|since|until|before|after) `?(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\\d)[0-9a-f]{7,40}\\b")),
            new Rule("who did what", ci("\\b(?:the lead(?: engineer)?|another helper|a helper|the previous helper)"
                    + " (?:changed|fixed|added|removed|rewrote|measured|ran|found)\\b")));

    /** The markers of docs/benchmarks.md's generated results: {@code <!-- bench-results-hosts:begin -->}. */
    private static final Pattern RESULTS_MARKER = Pattern.compile("^<!--\\s*(?:bench|jmh)-results[\\w-]*:(begin|end)\\s*-->\\s*$");

    private record Rule(String what, Pattern pattern) {
    }

    private static Pattern ci(String regex) {
        return Pattern.compile(regex, Pattern.CASE_INSENSITIVE | Pattern.UNICODE_CASE);
    }

    @Test
    void readmeAndGuidesSayWhatIsNotHowItCameToBe() {
        List<String> findings = findings(ROOT);
        if (!findings.isEmpty()) {
            fail(findings.size() + " line(s) narrate history; say what is, and move history to CHANGELOG.md"
                    + " or the commit message:\n" + String.join("\n", findings));
        }
    }

    @Test
    void theScanCoversReadmeAndTheGuides() {
        List<Path> files = files(ROOT);
        assertTrue(files.contains(ROOT.resolve("README.md")), files.toString());
        assertTrue(files.contains(ROOT.resolve("docs/rsocket.md")), files.toString());
        assertTrue(files.stream().noneMatch(f -> f.endsWith("CHANGELOG.md")), files.toString());
    }

    /** Each planted sentence is caught, in a guide and in README, and outside a benchmark table row. */
    @Test
    void plantedHistoryIsFound(@TempDir Path root) throws IOException {
        List<String> planted = List.of(
                "The afternoon of 2026-11-26 gave 0.91.",
                "Measured on November 26 in the sandbox.",
                "This session made the default the loops.",
                "Half as fast as the session before.",
                "Before this change frames were delivered on Reactor's parallel workers.",
                "Before/after: 12 us and 9 us.",
                "For the record, the row missed.",
                "This morning's run had every row.",
                "The morning's full run missed it too.",
                "The full run of 15:13 met every target.",
                "Fixed on main c4aa9cf by the busy-poll fork.",
                "Since commit 7110890 the default recycles.",
                "Until now nothing reacted to port events.",
                "The lead engineer measured 27 minutes.",
                "Measured at 2026-11-27T04:37Z.");
        Files.createDirectories(root.resolve("docs"));
        Files.createDirectories(root.resolve("samples"));
        Files.writeString(root.resolve("README.md"), "# r\n\n" + planted.getFirst() + "\n");
        Files.writeString(root.resolve("docs/guide.md"), "# g\n\n" + String.join("\n\n", planted) + "\n");
        Files.writeString(root.resolve("docs/benchmarks.md"), "# b\n\n| run | 2026-11-28 15:13 on 7110890 |\n"
                + "| --- | --- |\n\n" + planted.get(1) + "\n<!-- bench-results-c1:begin -->\nRun 2026-11-22T07:34:39Z on rxe0\n"
                + "<!-- bench-results-c1:end -->\n" + planted.get(2) + "\n");
        Files.createDirectories(root.resolve("docs/benchmarks/c1"));
        Files.writeString(root.resolve("docs/benchmarks/c1/results.md"), "Run 2026-11-22T07:34:39Z on rxe0\n");
        Files.writeString(root.resolve("CHANGELOG.md"), "## [0.1.0] - 2026-11-28\n\n" + planted.get(2) + "\n");
        List<String> findings = findings(root);
        for (String sentence : planted) {
            assertTrue(findings.stream().anyMatch(f -> f.startsWith("docs/guide.md:") && f.endsWith(sentence)),
                    "not found: " + sentence + "\n" + String.join("\n", findings));
        }
        assertTrue(findings.stream().anyMatch(f -> f.startsWith("README.md:3:")), findings.toString());
        assertTrue(findings.stream().anyMatch(f -> f.startsWith("docs/benchmarks.md:6:")), findings.toString());
        assertTrue(findings.stream().anyMatch(f -> f.startsWith("docs/benchmarks.md:10:")), findings.toString());
        assertTrue(findings.stream().noneMatch(f -> f.startsWith("docs/benchmarks.md:3:")
                || f.startsWith("docs/benchmarks.md:8:")), findings.toString());
        assertTrue(findings.stream().noneMatch(f -> f.startsWith("CHANGELOG") || f.startsWith("docs/benchmarks/")),
                findings.toString());
        assertEquals(planted.size() + 3, findings.size(), String.join("\n", findings));
    }

    /** What legitimately looks like a date, a time or a hash is left alone. */
    @Test
    void legitimateTextIsNotFlagged(@TempDir Path root) throws IOException {
        String text = """
                # Versions and numbers

                rdmaflux 0.1.0 needs JDK 25 and rdma-core 44.0 (Debian 12), kernel 6.1.0-28-amd64; ATOMIC_WRITE
                needs 6.2 or later. RFC 5040 (RDMAP), RFC 7306, IB spec 1.2.1 and reactor-core#4396 apply.
                Messages of 0 B to 2^31-1 bytes; an ACK timeout of 4.096 us x 2^14 = 67 ms; at 1048576 bytes
                and at 4096 bytes the ratio is 0.908. Session resumption is RSocket's, not ours; the
                client's session ticket is TLS's. A 16:9 screen, a 3:1 split, a 1:1 ratio.
                Changes are listed in CHANGELOG.md; each release says what changed.
                An eventfd used to wake the loop; a connection that no longer reads it.
                Run `date -u +%Y-%m-%d` to print today's date; deadbeef is not a commit.
                May 2026 brings nothing; you may 2x the buffers. A peer at fe80::1 on port 7471.

                ```sh
                $ scripts/bench   # 2026-11-28 output in a code block is not narration
                ```
                """;
        Files.createDirectories(root.resolve("docs"));
        Files.createDirectories(root.resolve("samples"));
        Files.writeString(root.resolve("README.md"), "# r\n");
        Files.writeString(root.resolve("docs/guide.md"), text);
        assertEquals(List.of(), findings(root));
    }

    /**
     * The lines of README.md and docs/**.md that narrate history, each as
     * {@code path:line: what: "match": the line}.
     *
     * @param root the repository root
     * @return the findings, in file and line order
     */
    static List<String> findings(Path root) {
        List<String> out = new ArrayList<>();
        for (Path file : files(root)) {
            String rel = root.relativize(file).toString().replace('\\', '/');
            boolean benchmarks = rel.equals("docs/benchmarks.md");
            List<String> lines;
            try {
                lines = Files.readAllLines(file);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            boolean fenced = false;
            boolean results = false;
            for (int i = 0; i < lines.size(); i++) {
                String line = lines.get(i);
                if (line.stripLeading().startsWith("```")) {
                    fenced = !fenced;
                    continue;
                }
                Matcher marker = RESULTS_MARKER.matcher(line);
                if (benchmarks && marker.matches()) {
                    results = marker.group(1).equals("begin");
                    continue;
                }
                if (fenced || (benchmarks && (results || line.stripLeading().startsWith("|")))) {
                    continue;
                }
                for (Rule rule : RULES) {
                    Matcher m = rule.pattern().matcher(line);
                    if (m.find()) {
                        out.add(rel + ":" + (i + 1) + ": " + rule.what() + ": \"" + m.group() + "\": " + line.strip());
                        break;
                    }
                }
            }
        }
        return out;
    }

    private static List<Path> files(Path root) {
        List<Path> files = new ArrayList<>();
        files.add(root.resolve("README.md"));
        Path results = root.resolve("docs/benchmarks");
        try (Stream<Path> s = Files.walk(root.resolve("docs"))) {
            s.filter(p -> p.toString().endsWith(".md") && !p.startsWith(results)).sorted().forEach(files::add);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return files;
    }
}
