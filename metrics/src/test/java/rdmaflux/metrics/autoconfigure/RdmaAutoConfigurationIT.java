package rdmaflux.metrics.autoconfigure;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import rdmaflux.cm.RdmaLoops;
import rdmaflux.testing.RdmaTestEnv;

/** On RDMA: the auto-configured loops are the context's, and closing the context ends their threads. */
class RdmaAutoConfigurationIT {
    @Test
    void loopsAreTheContextsAndEndWithIt() {
        RdmaTestEnv.device();   // fails, rather than skips, without RDMA
        RdmaLoops[] loops = new RdmaLoops[1];
        RdmaAutoConfigurationTest.RUNNER
                .withPropertyValues("rdmaflux.loops.thread-prefix=boot-test", "rdmaflux.loops.completion-loops=1")
                .run(context -> {
                    loops[0] = context.getBean(RdmaLoops.class);
                    assertEquals(1, loops[0].completionLoops());
                    assertFalse(loops[0].isDisposed());
                    assertTrue(Thread.getAllStackTraces().keySet().stream()
                            .anyMatch(t -> t.getName().startsWith("boot-test-")), "the loops' threads run");
                });
        assertTrue(loops[0].isDisposed(), "closing the context disposes the loops");
        assertTrue(Thread.getAllStackTraces().keySet().stream()
                .noneMatch(t -> t.getName().startsWith("boot-test-") && t.isAlive()),
                "closing waits for the loops' threads to end");
    }
}
