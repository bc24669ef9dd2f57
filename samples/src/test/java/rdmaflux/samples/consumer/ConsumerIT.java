package rdmaflux.samples.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.lang.module.Configuration;
import java.lang.module.ModuleFinder;
import java.lang.module.ResolvedModule;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import rdmaflux.testing.ChildProcess;
import rdmaflux.testing.RdmaTestEnv;

/**
 * rdmaflux as a separate project gets it: samples/consumer, built by {@code scripts/consumer-check --build}
 * against the jars and published poms in the local Maven repository, runs here as child JVMs on RDMA,
 * on the class path and on the module path, with and without rsocket-core and Micrometer. One JVM per
 * variant: each costs tens of seconds under the sandbox's emulation.
 */
class ConsumerIT {
    // Below the sandbox run's 300 s per test, so a hung child fails with its output, not a bare timeout.
    private static final Duration T = Duration.ofSeconds(270);
    /** The optional libraries, as jar-name prefixes and as module names. */
    private static final List<String> OPTIONAL_JARS = List.of("rsocket-", "netty-", "micrometer-", "rdmaflux-metrics-");
    private static final Set<String> OPTIONAL_MODULES = Set.of("rsocket.core", "io.netty.buffer", "io.netty.common",
            "micrometer.core", "micrometer.observation", "rdmaflux.metrics");
    /** What rdmaflux.cm's {@code requires transitive} gives a module that requires only rdmaflux.cm. */
    private static final Set<String> TRANSITIVE = Set.of("rdmaflux.cm", "rdmaflux.verbs", "reactor.core",
            "org.reactivestreams");

    private static Path app;
    private static Path libCore;
    private static Path libFull;

    @TempDir
    Path tmp;

    @BeforeAll
    static void prebuilt() throws URISyntaxException, IOException {
        // samples/target/test-classes -> samples/consumer/target/consumer
        Path samples = Path.of(ConsumerIT.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                .getParent().getParent();
        Path dir = samples.resolve("consumer/target/consumer");
        app = dir.resolve("consumer.jar");
        libCore = dir.resolve("lib-core");
        libFull = dir.resolve("lib-full");
        Path version = dir.resolve("rdmaflux.version");
        if (!Files.isRegularFile(app) || !Files.isDirectory(libCore) || !Files.isDirectory(libFull)
                || !Files.isRegularFile(version)) {
            throw new AssertionError("the consumer project is not built (" + dir + " is incomplete): run "
                    + "scripts/consumer-check --build first (or scripts/consumer-check, which builds and runs this)");
        }
        String built = Files.readString(version).strip();
        assertTrue(Files.exists(libFull.resolve("rdmaflux-cm-reactive-" + built + ".jar")),
                "consumer built for rdmaflux " + built + " without its jar: run scripts/consumer-check --build");
    }

    @Test
    void publishedPomsLeaveTheOptionalLibrariesOut() throws IOException {
        List<String> core = jarNames(libCore);
        List<String> full = jarNames(libFull);
        assertTrue(core.stream().noneMatch(n -> OPTIONAL_JARS.stream().anyMatch(n::startsWith)),
                "rdmaflux-cm-reactive's runtime dependencies include optional libraries: " + core);
        for (String prefix : List.of("rdmaflux-verbs-", "rdmaflux-cm-reactive-", "reactor-core-", "reactive-streams-")) {
            assertTrue(core.stream().anyMatch(n -> n.startsWith(prefix)), prefix + " missing: " + core);
        }
        for (String prefix : OPTIONAL_JARS) {
            assertTrue(full.stream().anyMatch(n -> n.startsWith(prefix)), prefix + " missing: " + full);
        }
    }

    /**
     * How the JVM resolves the consumer's module ({@code requires rdmaflux.cm}, {@code requires static}
     * rsocket.core and rdmaflux.metrics) with every library on the module path: rdmaflux.cm's
     * {@code requires transitive} makes verbs and Reactor readable; {@code requires static} alone
     * resolves neither optional part, and {@code --add-modules} brings each along with what it needs.
     */
    @Test
    void requiresStaticAndTransitiveResolveAsDeclared() {
        ModuleFinder finder = ModuleFinder.of(app, libFull);
        Configuration plain = resolve(finder, Set.of("example.consumer"));
        ResolvedModule consumer = plain.findModule("example.consumer").orElseThrow();
        Set<String> reads = consumer.reads().stream().map(ResolvedModule::name).collect(Collectors.toSet());
        assertTrue(reads.containsAll(TRANSITIVE), "the consumer reads " + reads);
        assertTrue(plain.findModule("rdmaflux.metrics").isEmpty(), "requires static resolved rdmaflux.metrics");

        Configuration added = resolve(finder, Set.of("example.consumer", "rsocket.core", "rdmaflux.metrics"));
        Set<String> readsAdded = added.findModule("example.consumer").orElseThrow().reads().stream()
                .map(ResolvedModule::name).collect(Collectors.toSet());
        // micrometer.core through rdmaflux.metrics' requires transitive.
        assertTrue(readsAdded.containsAll(Set.of("rsocket.core", "rdmaflux.metrics", "micrometer.core")),
                "the consumer reads " + readsAdded);
    }

    @Test
    void classPathWithoutRSocketAndMicrometer() throws Exception {
        String out = run(classPath(libCore), false);
        assertCore(out, "class", false);
    }

    @Test
    void classPathWithRSocketAndMicrometer() throws Exception {
        String out = run(classPath(libFull), false);
        assertCore(out, "class", true);
        assertOptionalParts(out);
    }

    @Test
    void modulePathWithoutRSocketAndMicrometer() throws Exception {
        String out = run(modulePath(libCore, false), true);
        assertCore(out, "module", false);
        Set<String> modules = modules(out);
        assertTrue(modules.containsAll(TRANSITIVE), "resolved: " + modules);
        assertTrue(modules.stream().noneMatch(OPTIONAL_MODULES::contains), "resolved: " + modules);
    }

    @Test
    void modulePathWithRSocketAndMicrometer() throws Exception {
        String out = run(modulePath(libFull, true), true);
        assertCore(out, "module", true);
        assertOptionalParts(out);
        Set<String> modules = modules(out);
        assertTrue(modules.containsAll(OPTIONAL_MODULES), "resolved: " + modules);
    }

    private static Configuration resolve(ModuleFinder finder, Set<String> roots) {
        return ModuleLayer.boot().configuration().resolve(finder, ModuleFinder.of(), roots);
    }

    private static List<String> classPath(Path lib) throws IOException {
        return List.of("--enable-native-access=ALL-UNNAMED", "-cp", app + File.pathSeparator + jars(lib),
                "example.consumer.Main");
    }

    /** Native access for rdmaflux.verbs alone: a restricted call from any other module would be denied. */
    private static List<String> modulePath(Path lib, boolean optionalParts) {
        List<String> args = new ArrayList<>(List.of("--enable-native-access=rdmaflux.verbs",
                "--module-path", app + File.pathSeparator + lib));
        if (optionalParts) {
            // requires static does not resolve them: an application that wants them adds them.
            args.addAll(List.of("--add-modules", "rsocket.core,rdmaflux.metrics"));
        }
        args.addAll(List.of("-m", "example.consumer/example.consumer.Main"));
        return args;
    }

    private String run(List<String> launch, boolean modulePath) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-ea", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "--illegal-native-access=deny"));
        command.addAll(launch);
        command.add(RdmaTestEnv.address().getHostAddress());
        try (ChildProcess p = ChildProcess.start(tmp, command.toArray(String[]::new))) {
            assertEquals(0, p.awaitExit(T), p::describe);
            String out = p.stdout();
            assertTrue(out.contains("consumer: path " + (modulePath ? "module" : "class")), p.describe());
            // The grant given is the one users are told to pass: it leaves no native-access warning either.
            assertFalse(p.stderr().contains("restricted method"), p.describe());
            return out;
        }
    }

    private static void assertCore(String out, String path, boolean optionalParts) {
        assertTrue(out.contains("consumer: assertions on"), out);
        assertTrue(out.contains("consumer: rsocket " + (optionalParts ? "present" : "absent")), out);
        assertTrue(out.contains("consumer: micrometer " + (optionalParts ? "present" : "absent")), out);
        assertTrue(out.contains("consumer: devices [") && out.contains(RdmaTestEnv.device()), out);
        assertTrue(out.contains("consumer: echo \"hello, RDMA\""), out);
        assertTrue(out.contains("consumer: done in "), out);
        if (!optionalParts) {
            assertFalse(out.contains("consumer: rsocket reply"), out);
            assertFalse(out.contains("consumer: messages sent"), out);
        }
    }

    private static void assertOptionalParts(String out) {
        assertTrue(out.contains("consumer: rsocket reply \"hello, RDMA over RSocket\""), out);
        // One message each way, counted by the recorder both connections share.
        assertTrue(out.contains("consumer: messages sent 2"), out);
    }

    private static Set<String> modules(String out) {
        return out.lines().filter(l -> l.startsWith("consumer: modules "))
                .flatMap(l -> Stream.of(l.substring("consumer: modules ".length()).split(",")))
                .collect(Collectors.toSet());
    }

    private static String jars(Path lib) throws IOException {
        return jarNames(lib).stream().map(n -> lib.resolve(n).toString()).collect(Collectors.joining(File.pathSeparator));
    }

    private static List<String> jarNames(Path lib) throws IOException {
        try (Stream<Path> files = Files.list(lib)) {
            return files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".jar")).sorted().toList();
        }
    }
}
