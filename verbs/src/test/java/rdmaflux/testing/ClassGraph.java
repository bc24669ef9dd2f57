package rdmaflux.testing;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;

import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;

/**
 * The dependency graph of a module's main classes, for the architecture tests: nested classes folded
 * into their top-level class (as {@code jdeps -verbose:class} output is usually read), edges between
 * top-level classes under one package prefix, and the strongly connected components of it and of the
 * package graph derived from it.
 */
public final class ClassGraph {
    private final Map<String, Set<String>> edges = new TreeMap<>();

    private ClassGraph() {
    }

    /**
     * Where a class was loaded from, for ArchUnit to import that module's main classes alone.
     *
     * @param c a class of the module
     * @return its classes directory or jar
     */
    public static java.net.URI classesOf(Class<?> c) {
        try {
            return c.getProtectionDomain().getCodeSource().getLocation().toURI();
        } catch (java.net.URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The graph of {@code classes} restricted to those whose name starts with {@code prefix}.
     *
     * @param classes imported main classes
     * @param prefix a package prefix, such as {@code "rdmaflux.cm"}
     * @return the graph
     */
    public static ClassGraph of(JavaClasses classes, String prefix) {
        ClassGraph g = new ClassGraph();
        for (JavaClass c : classes) {
            String from = topLevel(c.getName());
            if (!under(from, prefix)) {
                continue;
            }
            Set<String> out = g.edges.computeIfAbsent(from, k -> new TreeSet<>());
            for (Dependency d : c.getDirectDependenciesFromSelf()) {
                String to = topLevel(d.getTargetClass().getBaseComponentType().getName());
                if (under(to, prefix) && !to.equals(from)) {
                    out.add(to);
                    g.edges.computeIfAbsent(to, k -> new TreeSet<>());
                }
            }
        }
        return g;
    }

    /**
     * The graph of a classes directory as the JDK's {@code jdeps -verbose:class -filter:none} reads it (every
     * class its constant pool names), restricted to names under {@code prefix}: the measure the architecture's
     * limits are stated in. The directory is read through a copy without {@code module-info.class}, so that
     * jdeps needs none of the module's dependencies.
     *
     * @param classes a module's main classes directory
     * @param prefix a package prefix, such as {@code "rdmaflux.cm"}
     * @return the graph
     */
    public static ClassGraph ofJdeps(Path classes, String prefix) {
        Path copy = null;
        try {
            copy = Files.createTempDirectory("classgraph");
            Path target = copy;
            try (var files = Files.walk(classes)) {
                for (Path f : (Iterable<Path>) files::iterator) {
                    Path to = target.resolve(classes.relativize(f).toString());
                    if (Files.isDirectory(f)) {
                        Files.createDirectories(to);
                    } else if (f.toString().endsWith(".class") && !f.getFileName().toString().equals("module-info.class")) {
                        Files.copy(f, to);
                    }
                }
            }
            StringWriter out = new StringWriter();
            int rc = ToolProvider.findFirst("jdeps").orElseThrow().run(new PrintWriter(out),
                    new PrintWriter(out), "-verbose:class", "-filter:none", target.toString());
            if (rc != 0) {
                throw new IllegalStateException("jdeps exited with " + rc + ": " + out);
            }
            ClassGraph g = new ClassGraph();
            Pattern edge = Pattern.compile("^\\s+(\\S+)\\s+->\\s+(\\S+)");
            for (String line : out.toString().split("\\R")) {
                Matcher m = edge.matcher(line);
                if (!m.find()) {
                    continue;
                }
                String from = topLevel(m.group(1));
                String to = topLevel(m.group(2));
                if (under(from, prefix) && under(to, prefix)) {
                    Set<String> successors = g.edges.computeIfAbsent(from, k -> new TreeSet<>());
                    g.edges.computeIfAbsent(to, k -> new TreeSet<>());
                    if (!to.equals(from)) {
                        successors.add(to);
                    }
                }
            }
            return g;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            if (copy != null) {
                try (var files = Files.walk(copy)) {
                    files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
                } catch (IOException e) {
                    // a temporary directory left behind is harmless
                }
            }
        }
    }

    /**
     * A graph from explicit edges, for testing the graph code itself.
     *
     * @param edges each node's successors
     * @return the graph
     */
    public static ClassGraph ofEdges(Map<String, Set<String>> edges) {
        ClassGraph g = new ClassGraph();
        edges.forEach((k, v) -> {
            g.edges.computeIfAbsent(k, x -> new TreeSet<>()).addAll(v);
            v.forEach(t -> g.edges.computeIfAbsent(t, x -> new TreeSet<>()));
        });
        return g;
    }

    private static boolean under(String name, String prefix) {
        return name.startsWith(prefix + ".");
    }

    private static String topLevel(String name) {
        int dollar = name.indexOf('$');
        return dollar < 0 ? name : name.substring(0, dollar);
    }

    private static String packageOf(String name) {
        int dot = name.lastIndexOf('.');
        return dot < 0 ? "" : name.substring(0, dot);
    }

    /** {@return the top-level classes} */
    public Set<String> classes() {
        return edges.keySet();
    }

    /** {@return the packages the classes are in} */
    public Set<String> packages() {
        Set<String> p = new TreeSet<>();
        edges.keySet().forEach(c -> p.add(packageOf(c)));
        return p;
    }

    /** {@return the package graph: an edge where a class of one package uses a class of another} */
    public ClassGraph packageGraph() {
        ClassGraph g = new ClassGraph();
        edges.forEach((from, tos) -> {
            String pf = packageOf(from);
            Set<String> out = g.edges.computeIfAbsent(pf, k -> new TreeSet<>());
            for (String to : tos) {
                String pt = packageOf(to);
                g.edges.computeIfAbsent(pt, k -> new TreeSet<>());
                if (!pt.equals(pf)) {
                    out.add(pt);
                }
            }
        });
        return g;
    }

    /** {@return the strongly connected components with more than one node, largest first} */
    public List<Set<String>> cycles() {
        List<Set<String>> out = new ArrayList<>();
        for (Set<String> c : components()) {
            if (c.size() > 1) {
                out.add(c);
            }
        }
        return out;
    }

    /** {@return the largest strongly connected component (one node when the graph has no cycle)} */
    public Set<String> largestComponent() {
        List<Set<String>> all = components();
        return all.isEmpty() ? Set.of() : all.getFirst();
    }

    /** {@return every strongly connected component, largest first} (Tarjan's algorithm, iterative) */
    public List<Set<String>> components() {
        Map<String, Integer> index = new HashMap<>();
        Map<String, Integer> low = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        Set<String> onStack = new HashSet<>();
        List<Set<String>> out = new ArrayList<>();
        int[] next = {0};
        for (String root : edges.keySet()) {
            if (index.containsKey(root)) {
                continue;
            }
            Deque<Map.Entry<String, java.util.Iterator<String>>> work = new ArrayDeque<>();
            visit(root, index, low, stack, onStack, next, work);
            while (!work.isEmpty()) {
                var top = work.peek();
                String v = top.getKey();
                if (top.getValue().hasNext()) {
                    String w = top.getValue().next();
                    if (!index.containsKey(w)) {
                        visit(w, index, low, stack, onStack, next, work);
                    } else if (onStack.contains(w)) {
                        low.put(v, Math.min(low.get(v), index.get(w)));
                    }
                    continue;
                }
                work.pop();
                if (!work.isEmpty()) {
                    String parent = work.peek().getKey();
                    low.put(parent, Math.min(low.get(parent), low.get(v)));
                }
                if (low.get(v).equals(index.get(v))) {
                    Set<String> c = new TreeSet<>();
                    String w;
                    do {
                        w = stack.pop();
                        onStack.remove(w);
                        c.add(w);
                    } while (!w.equals(v));
                    out.add(c);
                }
            }
        }
        out.sort(Comparator.comparingInt((Set<String> c) -> -c.size()));
        return out;
    }

    private void visit(String v, Map<String, Integer> index, Map<String, Integer> low, Deque<String> stack,
                       Set<String> onStack, int[] next, Deque<Map.Entry<String, java.util.Iterator<String>>> work) {
        index.put(v, next[0]);
        low.put(v, next[0]);
        next[0]++;
        stack.push(v);
        onStack.add(v);
        work.push(Map.entry(v, edges.getOrDefault(v, Set.of()).iterator()));
    }

    @Override
    public String toString() {
        return edges.toString();
    }
}
