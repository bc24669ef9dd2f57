package rdmaflux.cm.internal;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;

import org.junit.jupiter.api.Test;

/**
 * The waits the integration allows are named by strings (the methods are private), which a rename would leave
 * behind without a compile error: BlockHound would then report the wait again, but only where it happens. Each
 * name must be a method its class declares.
 */
class LoopsBlockHoundIntegrationTest {

    @Test
    void everyAllowedWaitIsAMethodItsClassDeclares() throws ClassNotFoundException {
        for (LoopsBlockHoundIntegration.Wait w : LoopsBlockHoundIntegration.WAITS) {
            Class<?> c = Class.forName(w.className());
            assertTrue(Arrays.stream(c.getDeclaredMethods()).anyMatch(m -> m.getName().equals(w.method())),
                    w.className() + " declares no method " + w.method());
        }
    }
}
