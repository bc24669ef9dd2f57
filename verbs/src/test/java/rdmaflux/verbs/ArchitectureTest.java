package rdmaflux.verbs;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.core.importer.Location;
import org.junit.jupiter.api.Test;
import rdmaflux.testing.ClassGraph;

/**
 * verbs' shape, from its compiled main classes: no package cycle, the generated bindings below the
 * handles, nothing above them, and the class knot no larger than the C object graph it mirrors.
 */
class ArchitectureTest {
    /** The sealed {@code NativeResource} family and its handles: 25 classes that reference each other. */
    private static final int LARGEST_COMPONENT = 25;

    private static final JavaClasses MAIN = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importLocations(Set.of(Location.of(ClassGraph.classesOf(RdmaException.class))));

    @Test
    void packagesFormNoCycle() {
        assertEquals(java.util.List.of(), ClassGraph.of(MAIN, "rdmaflux").packageGraph().cycles(), "package cycles");
        assertEquals(java.util.List.of(), ClassGraph.ofJdeps(java.nio.file.Path.of(ClassGraph.classesOf(RdmaException.class)),
                "rdmaflux").packageGraph().cycles(), "package cycles (jdeps)");
    }

    @Test
    void theLargestClassKnotStaysTheNativeResourceFamily() {
        // Both readings of the class files: ArchUnit's, and jdeps', in which the limit is stated.
        for (ClassGraph g : java.util.List.of(ClassGraph.of(MAIN, "rdmaflux.verbs"),
                ClassGraph.ofJdeps(java.nio.file.Path.of(ClassGraph.classesOf(RdmaException.class)), "rdmaflux.verbs"))) {
            Set<String> knot = g.largestComponent();
            assertTrue(knot.size() <= LARGEST_COMPONENT, knot.size() + " classes in one knot: " + knot);
        }
    }

    @Test
    void theBindingsDependOnNothingAboveThem() {
        noClasses().that().resideInAPackage("rdmaflux.verbs.ffi..")
                .should().dependOnClassesThat().resideInAPackage("rdmaflux.verbs")
                .check(MAIN);
        noClasses().that().resideInAPackage("rdmaflux.verbs..")
                .should().dependOnClassesThat().resideInAnyPackage("rdmaflux.cm..", "rdmaflux.metrics..",
                        "rdmaflux.samples..")
                .check(MAIN);
    }
}
