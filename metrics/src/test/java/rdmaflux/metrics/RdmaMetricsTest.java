package rdmaflux.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.lang.reflect.InvocationTargetException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import rdmaflux.cm.RdmaRecorder;

/** Turning metrics on with and without Micrometer on the class path. */
class RdmaMetricsTest {

    @Test
    void globalRecorderRecordsIntoTheGlobalRegistry() {
        SimpleMeterRegistry simple = new SimpleMeterRegistry();
        Metrics.addRegistry(simple);
        try {
            assertTrue(RdmaMetrics.isMicrometerAvailable());
            RdmaRecorder r = RdmaMetrics.globalRecorder();
            r.creditWait();
            assertEquals(1, simple.get("rdmaflux.credit.waits").counter().count());
        } finally {
            Metrics.removeRegistry(simple);
        }
    }

    /** The same classes, loaded by a class loader that sees everything on the test class path but Micrometer. */
    @Test
    void withoutMicrometerTheErrorSaysWhatToAdd() throws Exception {
        List<URL> urls = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (!entry.contains("micrometer")) {
                urls.add(Path.of(entry).toUri().toURL());
            }
        }
        try (URLClassLoader noMicrometer = new URLClassLoader(urls.toArray(URL[]::new),
                ClassLoader.getPlatformClassLoader())) {
            assertThrows(ClassNotFoundException.class,
                    () -> noMicrometer.loadClass("io.micrometer.core.instrument.MeterRegistry"));
            Class<?> metrics = noMicrometer.loadClass(RdmaMetrics.class.getName());
            assertFalse((Boolean) metrics.getMethod("isMicrometerAvailable").invoke(null));
            InvocationTargetException e = assertThrows(InvocationTargetException.class,
                    () -> metrics.getMethod("globalRecorder").invoke(null));
            IllegalStateException cause = assertInstanceOf(IllegalStateException.class, e.getCause());
            assertTrue(cause.getMessage().contains("io.micrometer:micrometer-core"), cause.getMessage());
            // cm-reactive itself runs without Micrometer: its no-op recorder loads and works.
            Class<?> recorder = noMicrometer.loadClass(RdmaRecorder.class.getName());
            Object noop = recorder.getField("NOOP").get(null);
            recorder.getMethod("creditWait").invoke(noop);
        }
    }
}
