package rdmaflux.cm;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.core.importer.Location;
import org.junit.jupiter.api.Test;
import rdmaflux.testing.ClassGraph;

/**
 * The module's shape, from its compiled main classes (docs/architecture.md describes it): packages by
 * concern with no cycle between them, the implementation in packages the module does not export, the
 * layers ffi, verbs, cm, metrics in one direction, and no class knot larger than {@link #LARGEST_COMPONENT}.
 */
class ArchitectureTest {
    /** The largest set of classes that all reach each other (nested classes folded into their top-level class). */
    private static final int LARGEST_COMPONENT = 10;
    /** The API package, rsocket, and one package per concern of the implementation. */
    private static final int MIN_PACKAGES = 5;

    private static final JavaClasses MAIN = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importLocations(Set.of(Location.of(ClassGraph.classesOf(RdmaConnection.class)),
                    Location.of(ClassGraph.classesOf(rdmaflux.verbs.RdmaException.class))));

    private static final ClassGraph CM = ClassGraph.of(MAIN, "rdmaflux.cm");
    /** The same classes as jdeps reads them, the measure the limits are stated in. */
    private static final ClassGraph CM_JDEPS = ClassGraph.ofJdeps(Path.of(ClassGraph.classesOf(RdmaConnection.class)),
            "rdmaflux.cm");

    @Test
    void packagesFormNoCycle() {
        assertEquals(List.of(), CM.packageGraph().cycles(), "package cycles");
        assertEquals(List.of(), CM_JDEPS.packageGraph().cycles(), "package cycles (jdeps)");
    }

    @Test
    void noClassKnotIsLargerThanTen() {
        for (ClassGraph g : List.of(CM, CM_JDEPS)) {
            Set<String> knot = g.largestComponent();
            assertTrue(knot.size() <= LARGEST_COMPONENT, knot.size() + " classes in one knot: " + knot);
        }
    }

    @Test
    void theCodeIsInPackagesByConcern() {
        assertTrue(CM.packages().size() >= MIN_PACKAGES, "packages: " + CM.packages());
    }

    @Test
    void theModuleExportsTheApiOnly() throws Exception {
        Path classes = Path.of(RdmaConnection.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        ModuleDescriptor module;
        try (InputStream in = Files.newInputStream(classes.resolve("module-info.class"))) {
            module = ModuleDescriptor.read(in);
        }
        Set<String> exported = new TreeSet<>();
        module.exports().forEach(e -> exported.add(e.source()));
        assertEquals(Set.of("rdmaflux.cm", "rdmaflux.cm.rsocket"), exported);
        for (String p : CM.packages()) {
            assertTrue(exported.contains(p) == !p.startsWith("rdmaflux.cm.internal"),
                    p + (exported.contains(p) ? " is internal but exported" : " is API but not exported"));
        }
    }

    @Test
    void layersPointOneWay() {
        noClasses().that().resideInAPackage("rdmaflux.cm..")
                .should().dependOnClassesThat().resideInAnyPackage("rdmaflux.verbs.ffi..", "rdmaflux.metrics..",
                        "rdmaflux.samples..")
                .check(MAIN);
        noClasses().that().resideInAPackage("rdmaflux.verbs..")
                .should().dependOnClassesThat().resideInAPackage("rdmaflux.cm..")
                .check(MAIN);
    }

    @Test
    void theApiDependsOnNoInternalPackage() {
        noClasses().that().resideInAnyPackage("rdmaflux.cm", "rdmaflux.cm.rsocket")
                .should().dependOnClassesThat().resideInAPackage("rdmaflux.cm.internal..")
                .check(MAIN);
    }
}
