package rdmaflux.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;

class ClassGraphTest {

    @Test
    void findsTheComponentsOfAGraphAndOfItsPackages() {
        ClassGraph g = ClassGraph.ofEdges(Map.of(
                "p.A", Set.of("p.B"), "p.B", Set.of("p.C", "q.D"), "p.C", Set.of("p.A"),
                "q.D", Set.of("q.E"), "q.E", Set.of()));
        assertEquals(Set.of("p.A", "p.B", "p.C"), g.largestComponent());
        assertEquals(List.of(Set.of("p.A", "p.B", "p.C")), g.cycles());
        assertEquals(Set.of("p", "q"), g.packages());
        assertTrue(g.packageGraph().cycles().isEmpty());
    }

    @Test
    void aBackEdgeBetweenPackagesIsAPackageCycle() {
        ClassGraph g = ClassGraph.ofEdges(Map.of("p.A", Set.of("q.B"), "q.B", Set.of("q.C"), "q.C", Set.of("p.D")));
        assertTrue(g.cycles().isEmpty(), "no class cycle");
        assertEquals(List.of(Set.of("p", "q")), g.packageGraph().cycles());
    }
}
