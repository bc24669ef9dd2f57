package rdmaflux.samples.docs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Keeps the Java blocks of README.md and docs/**.md equal to regions of compiled source files.
 *
 * <p>A block in the markdown is preceded by a marker line naming its source:
 * <pre>
 * &lt;!-- snippet: rdmaflux/samples/docs/ReactiveSnippets.java#echo --&gt;
 * ```java
 * ...
 * ```
 * </pre>
 * The path is relative to {@code samples/src/main/java} (or, when no such file is there, to the
 * repository root, as for {@code docs/examples/HelloRdma.java}). {@code #NAME} selects the lines
 * between {@code // tag::NAME[]} and {@code // end::NAME[]}; without it the whole file is the
 * snippet. Tag lines are dropped and the region is de-indented by its common indentation.
 *
 * <p>{@code DocSnippetsTest} fails the build when a block differs from its region, when a Java block
 * has no marker, or when a marker names a missing file or region. {@code scripts/doc-snippets} runs
 * {@link #main} with this file as a single-source program (it uses the JDK only), which rewrites
 * every marked block from its region. Not thread-safe; every method reads the files anew.
 */
public final class DocSnippets {
    /** The marker line before a block: {@code <!-- snippet: PATH[#NAME] -->}. */
    static final Pattern MARKER = Pattern.compile("^<!--\\s*snippet:\\s*(\\S+?)\\s*-->\\s*$");
    private static final Pattern TAG = Pattern.compile("^\\s*//\\s*(tag|end)::([A-Za-z0-9_.-]+)\\[\\]\\s*$");
    private static final String OPEN = "```java";
    private static final String CLOSE = "```";
    private static final String SOURCE_ROOT = "samples/src/main/java";

    private final Path root;

    /**
     * Works on one checkout.
     *
     * @param root the repository root (holding README.md and docs/)
     */
    public DocSnippets(Path root) {
        this.root = root;
    }

    /**
     * Finds the repository root from a directory inside it: the first ancestor (or itself) that has
     * README.md and samples/ (Surefire runs in samples/, scripts/it in the root).
     *
     * @param start where to look from
     * @return the root
     * @throws IllegalStateException when no ancestor qualifies
     */
    public static Path findRoot(Path start) {
        for (Path p = start.toAbsolutePath().normalize(); p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("README.md")) && Files.isDirectory(p.resolve("samples"))
                    && Files.isDirectory(p.resolve("docs"))) {
                return p;
            }
        }
        throw new IllegalStateException("no repository root (README.md, samples/, docs/) above " + start);
    }

    /**
     * Rewrites the blocks (default) or only checks them.
     *
     * @param args {@code --check} to report differences and exit 1 instead of writing
     * @throws IOException when a file cannot be read or written
     */
    public static void main(String[] args) throws IOException {
        boolean check = args.length > 0 && args[0].equals("--check");
        DocSnippets snippets = new DocSnippets(findRoot(Path.of("")));
        List<String> problems = snippets.problems();
        if (check) {
            problems.forEach(System.err::println);
            System.exit(problems.isEmpty() ? 0 : 1);
        }
        List<String> unfixable = snippets.unfixable();
        unfixable.forEach(System.err::println);
        List<Path> changed = snippets.rewrite();
        for (Path p : changed) {
            System.out.println("doc-snippets: rewrote " + snippets.root.relativize(p));
        }
        if (changed.isEmpty() && unfixable.isEmpty()) {
            System.out.println("doc-snippets: every block already matches its source");
        }
        System.exit(unfixable.isEmpty() ? 0 : 1);
    }

    /** A fenced Java block: its marker's reference (or null), and its lines (0-based, fences excluded). */
    record Block(Path file, int openLine, int closeLine, String ref, String text) {
        String where(Path root) {
            return root.relativize(file) + ":" + (openLine + 1);
        }
    }

    /**
     * {@return README.md and every markdown file under docs/, sorted}
     *
     * @throws UncheckedIOException when docs/ cannot be listed
     */
    public List<Path> markdownFiles() {
        List<Path> files = new ArrayList<>();
        files.add(root.resolve("README.md"));
        try (Stream<Path> s = Files.walk(root.resolve("docs"))) {
            s.filter(p -> p.toString().endsWith(".md")).sorted().forEach(files::add);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return files;
    }

    List<Block> blocks(Path markdown) {
        List<String> lines = read(markdown);
        List<Block> blocks = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            if (!lines.get(i).strip().equals(OPEN)) {
                continue;
            }
            int close = i + 1;
            while (close < lines.size() && !lines.get(close).strip().equals(CLOSE)) {
                close++;
            }
            String ref = null;
            if (i > 0) {
                Matcher m = MARKER.matcher(lines.get(i - 1));
                ref = m.matches() ? m.group(1) : null;
            }
            blocks.add(new Block(markdown, i, close, ref, String.join("\n", lines.subList(i + 1, Math.min(close,
                    lines.size())))));
            i = close;
        }
        return blocks;
    }

    /**
     * The text a reference stands for.
     *
     * @param ref {@code PATH#NAME} or {@code PATH}
     * @return the region, tag lines removed and de-indented
     * @throws IllegalArgumentException when the file or the region does not exist, or a tag is unbalanced
     */
    public String region(String ref) {
        int hash = ref.indexOf('#');
        String path = hash < 0 ? ref : ref.substring(0, hash);
        String name = hash < 0 ? null : ref.substring(hash + 1);
        Path file = root.resolve(SOURCE_ROOT).resolve(path);
        if (!Files.isRegularFile(file)) {
            file = root.resolve(path);
        }
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException("no file " + path + " under " + SOURCE_ROOT + " or the repository root");
        }
        List<String> lines = read(file);
        List<String> region = new ArrayList<>();
        boolean inside = name == null;
        boolean found = name == null;
        for (String line : lines) {
            Matcher m = TAG.matcher(line);
            if (m.matches()) {
                if (m.group(2).equals(name)) {
                    if (m.group(1).equals("tag")) {
                        if (found) {
                            throw new IllegalArgumentException("region " + name + " opens twice in " + path);
                        }
                        inside = true;
                        found = true;
                    } else {
                        if (!inside) {
                            throw new IllegalArgumentException("region " + name + " ends before it starts in " + path);
                        }
                        inside = false;
                    }
                }
                continue;
            }
            if (inside) {
                region.add(line);
            }
        }
        if (!found) {
            throw new IllegalArgumentException("no region tag::" + name + "[] in " + path);
        }
        if (inside && name != null) {
            throw new IllegalArgumentException("region " + name + " has no end::" + name + "[] in " + path);
        }
        return deindent(region);
    }

    static String deindent(List<String> lines) {
        int from = 0;
        int to = lines.size();
        while (from < to && lines.get(from).isBlank()) {
            from++;
        }
        while (to > from && lines.get(to - 1).isBlank()) {
            to--;
        }
        List<String> body = lines.subList(from, to);
        int indent = Integer.MAX_VALUE;
        for (String l : body) {
            if (!l.isBlank()) {
                indent = Math.min(indent, l.length() - l.stripLeading().length());
            }
        }
        StringBuilder sb = new StringBuilder();
        for (String l : body) {
            if (!sb.isEmpty()) {
                sb.append('\n');
            }
            sb.append(l.isBlank() ? "" : l.substring(indent).stripTrailing());
        }
        return sb.toString();
    }

    /**
     * Everything wrong with the documentation's Java blocks.
     *
     * @return one message per problem: a block without a marker, a missing file or region, or a block
     *         whose text differs from its region (with the difference)
     */
    public List<String> problems() {
        List<String> problems = new ArrayList<>();
        for (Path md : markdownFiles()) {
            for (Block b : blocks(md)) {
                if (b.ref() == null) {
                    problems.add(b.where(root) + ": a ```java block without a '<!-- snippet: PATH#NAME -->' line before it;"
                            + " put the code in a tagged region under " + SOURCE_ROOT + "/rdmaflux/samples/docs/");
                    continue;
                }
                String expected;
                try {
                    expected = region(b.ref());
                } catch (IllegalArgumentException e) {
                    problems.add(b.where(root) + ": snippet " + b.ref() + ": " + e.getMessage());
                    continue;
                }
                if (!expected.equals(b.text())) {
                    problems.add(b.where(root) + ": the block differs from " + b.ref()
                            + "; edit the Java source, then run scripts/doc-snippets to rewrite the blocks.\n"
                            + diff(expected, b.text()));
                }
            }
            List<String> lines = read(md);
            for (int i = 0; i < lines.size(); i++) {
                if (MARKER.matcher(lines.get(i)).matches()
                        && (i + 1 >= lines.size() || !lines.get(i + 1).strip().equals(OPEN))) {
                    problems.add(root.relativize(md) + ":" + (i + 1) + ": a snippet marker not followed by a ```java line");
                }
            }
        }
        return problems;
    }

    private List<String> unfixable() {
        return problems().stream().filter(p -> !p.contains("run scripts/doc-snippets")).toList();
    }

    /**
     * Replaces every marked block whose reference resolves with its region's text.
     *
     * @return the files that changed
     */
    public List<Path> rewrite() {
        List<Path> changed = new ArrayList<>();
        for (Path md : markdownFiles()) {
            List<String> lines = new ArrayList<>(read(md));
            Map<Block, String> updates = new LinkedHashMap<>();
            for (Block b : blocks(md)) {
                if (b.ref() == null) {
                    continue;
                }
                try {
                    String text = region(b.ref());
                    if (!text.equals(b.text())) {
                        updates.put(b, text);
                    }
                } catch (IllegalArgumentException e) {
                    // Reported by problems(); the block stays as it is.
                }
            }
            if (updates.isEmpty()) {
                continue;
            }
            List<Block> order = new ArrayList<>(updates.keySet());
            for (int k = order.size() - 1; k >= 0; k--) { // bottom up, so earlier line numbers stay valid
                Block b = order.get(k);
                List<String> body = lines.subList(b.openLine() + 1, b.closeLine());
                body.clear();
                body.addAll(List.of(updates.get(b).split("\n", -1)));
            }
            write(md, lines);
            changed.add(md);
        }
        return changed;
    }

    /**
     * A line diff of two texts.
     *
     * @param expected the source region
     * @param actual the block in the markdown
     * @return lines prefixed with {@code -} (only in the source), {@code +} (only in the markdown) or two spaces
     */
    static String diff(String expected, String actual) {
        String[] a = expected.split("\n", -1);
        String[] b = actual.split("\n", -1);
        int[][] lcs = new int[a.length + 1][b.length + 1];
        for (int i = a.length - 1; i >= 0; i--) {
            for (int j = b.length - 1; j >= 0; j--) {
                lcs[i][j] = a[i].equals(b[j]) ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
            }
        }
        StringBuilder sb = new StringBuilder("  --- source (-) vs markdown (+) ---\n");
        int i = 0;
        int j = 0;
        while (i < a.length || j < b.length) {
            if (i < a.length && j < b.length && a[i].equals(b[j])) {
                sb.append("    ").append(a[i]).append('\n');
                i++;
                j++;
            } else if (j < b.length && (i == a.length || lcs[i][j + 1] >= lcs[i + 1][j])) {
                sb.append("  + ").append(b[j++]).append('\n');
            } else {
                sb.append("  - ").append(a[i++]).append('\n');
            }
        }
        return sb.toString();
    }

    private static List<String> read(Path file) {
        try {
            return Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void write(Path file, List<String> lines) {
        try {
            Files.writeString(file, String.join("\n", lines) + "\n", StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
