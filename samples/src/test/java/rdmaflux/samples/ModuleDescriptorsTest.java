package rdmaflux.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

/**
 * Reads the module descriptors of the library artifacts this module was built against (under
 * {@code ./mvnw verify}: the jars just packaged) and checks what they promise users: named modules,
 * and the generated bindings ({@code rdmaflux.verbs.ffi}) inside the verbs module but not exported.
 */
class ModuleDescriptorsTest {

    @Test
    void verbsExportsOnlyTheSafeLayer() {
        ModuleDescriptor verbs = descriptor("rdmaflux-verbs");
        assertEquals("rdmaflux.verbs", verbs.name());
        assertTrue(!verbs.isAutomatic() && !verbs.isOpen(), verbs.toString());
        assertEquals(Set.of("rdmaflux.verbs"), exports(verbs));
        assertTrue(verbs.packages().contains("rdmaflux.verbs.ffi"), verbs.packages().toString());
        assertTrue(verbs.opens().isEmpty(), verbs.opens().toString());
    }

    @Test
    void cmAndMetricsAreNamedModulesThatReexportWhatTheirApiUses() {
        ModuleDescriptor cm = descriptor("rdmaflux-cm-reactive");
        assertEquals("rdmaflux.cm", cm.name());
        assertEquals(Set.of("rdmaflux.cm", "rdmaflux.cm.rsocket"), exports(cm));
        assertEquals(Set.of("rdmaflux.verbs", "reactor.core", "org.reactivestreams"), transitive(cm));
        // The RSocket transport's dependencies are optional: an application without RSocket must not need them;
        // so is BlockHound, whose integration (provided below) only an application that installs it loads.
        Set<String> optional = cm.requires().stream()
                .filter(r -> r.modifiers().contains(ModuleDescriptor.Requires.Modifier.STATIC))
                .map(ModuleDescriptor.Requires::name).collect(java.util.stream.Collectors.toSet());
        assertEquals(Set.of("rsocket.core", "io.netty.buffer", "io.netty.common", "reactor.blockhound"), optional);
        assertEquals(Set.of("reactor.blockhound.integration.BlockHoundIntegration with "
                + "[rdmaflux.cm.internal.LoopsBlockHoundIntegration]"),
                cm.provides().stream().map(p -> p.service() + " with " + p.providers()).collect(Collectors.toSet()));

        ModuleDescriptor metrics = descriptor("rdmaflux-metrics");
        assertEquals("rdmaflux.metrics", metrics.name());
        assertEquals(Set.of("rdmaflux.metrics", "rdmaflux.metrics.autoconfigure"), exports(metrics));
        assertTrue(transitive(metrics).containsAll(Set.of("rdmaflux.cm", "micrometer.core")), metrics.toString());
        // The Spring Boot auto-configuration's dependencies are optional: an application without Spring must not need them.
        Set<String> springOrRSocket = metrics.requires().stream()
                .filter(r -> r.name().startsWith("spring.") || r.name().startsWith("rsocket."))
                .peek(r -> assertTrue(r.modifiers().contains(ModuleDescriptor.Requires.Modifier.STATIC), r.toString()))
                .map(ModuleDescriptor.Requires::name).collect(Collectors.toSet());
        assertTrue(springOrRSocket.containsAll(Set.of("spring.boot.autoconfigure", "rsocket.core")), metrics.toString());
    }

    private static Set<String> exports(ModuleDescriptor d) {
        return d.exports().stream().peek(e -> assertTrue(!e.isQualified(), e.toString()))
                .map(ModuleDescriptor.Exports::source).collect(Collectors.toSet());
    }

    private static Set<String> transitive(ModuleDescriptor d) {
        return d.requires().stream().filter(r -> r.modifiers().contains(ModuleDescriptor.Requires.Modifier.TRANSITIVE))
                .map(ModuleDescriptor.Requires::name).collect(Collectors.toSet());
    }

    /** The artifact's entry on the test class path: its jar, or its classes directory when only compiled. */
    private static ModuleDescriptor descriptor(String artifactId) {
        Path entry = Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .map(Path::of)
                .filter(p -> p.getFileName().toString().matches(artifactId + "-[0-9][^/]*(?<!-tests)\\.jar")
                        || p.endsWith(Path.of(artifactId.replace("rdmaflux-", ""), "target", "classes")))
                .findFirst()
                .orElseThrow(() -> new AssertionError(artifactId + " is not on the test class path"));
        return ModuleFinder.of(entry).findAll().stream().map(ModuleReference::descriptor).findFirst()
                .orElseThrow(() -> new AssertionError("no module in " + entry));
    }
}
