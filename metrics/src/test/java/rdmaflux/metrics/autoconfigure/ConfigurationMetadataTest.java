package rdmaflux.metrics.autoconfigure;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import rdmaflux.cm.ConnectionOptions;
import rdmaflux.cm.Step;

/**
 * The metadata IDEs complete {@code rdmaflux.*} from (written by spring-boot-configuration-processor) against
 * {@link ConnectionOptions}: every value option of the builder is a documented property, so an option added
 * to {@code ConnectionOptions} without its property fails here.
 */
class ConfigurationMetadataTest {
    /** Builder options that are code, not values: set with a {@link ConnectionOptionsCustomizer}. */
    private static final Set<String> CODE_OPTIONS = Set.of("scheduler", "recorder", "loops", "largeMessageMemory",
            "privateData", "timeout");

    @Test
    void everyValueOptionOfTheBuilderIsADocumentedProperty() throws IOException {
        String all = metadata();
        // The properties only: groups have names too, and hints follow.
        int from = all.indexOf("\"properties\"");
        int to = all.indexOf("\"hints\"");
        String json = all.substring(from, to > from ? to : all.length());
        Set<String> properties = new TreeSet<>();
        Matcher m = Pattern.compile("\"name\"\\s*:\\s*\"(rdmaflux\\.[a-z.-]+)\"").matcher(json);
        while (m.find()) {
            properties.add(m.group(1));
        }
        Set<String> expected = Arrays.stream(ConnectionOptions.Builder.class.getDeclaredMethods())
                .filter(x -> Modifier.isPublic(x.getModifiers()) && x.getReturnType() == ConnectionOptions.Builder.class)
                .map(Method::getName)
                .filter(n -> !CODE_OPTIONS.contains(n))
                .map(n -> "rdmaflux.connection." + kebab(n))
                .collect(Collectors.toCollection(TreeSet::new));
        for (Step s : Step.values()) {
            if (s != Step.TRANSFER) {
                expected.add("rdmaflux.connection.timeouts." + s.name().toLowerCase(java.util.Locale.ROOT));
            }
        }
        Set<String> missing = new TreeSet<>(expected);
        missing.removeAll(properties);
        assertTrue(missing.isEmpty(), "options without a property: " + missing);
        for (String p : properties) {
            assertTrue(json.matches("(?s).*\"name\"\\s*:\\s*\"" + Pattern.quote(p)
                    + "\"[^}]*\"description\"\\s*:\\s*\"[^\"]{10,}.*"), p + " has no description");
        }
        assertEquals(expected.size(), properties.stream().filter(p -> p.startsWith("rdmaflux.connection.")).count(),
                "a connection property that maps onto no option of the builder: " + properties);
    }

    private static String metadata() throws IOException {
        try (InputStream in = ConfigurationMetadataTest.class.getResourceAsStream(
                "/META-INF/spring-configuration-metadata.json")) {
            assertTrue(in != null, "no META-INF/spring-configuration-metadata.json: is the processor configured?");
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    private static String kebab(String camel) {
        return camel.replaceAll("([A-Z])", "-$1").toLowerCase(java.util.Locale.ROOT);
    }
}
