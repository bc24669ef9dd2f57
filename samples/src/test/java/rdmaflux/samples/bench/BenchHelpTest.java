package rdmaflux.samples.bench;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.util.IllegalFormatException;
import java.util.Locale;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * The benchmarks' {@code --help}: picocli formats every option's description with {@link String#format},
 * so a literal percent sign must be written {@code %%}; one that is not makes picocli print a warning for
 * each line of the help and show the raw text.
 */
class BenchHelpTest {
    @ParameterizedTest
    @ValueSource(classes = {Bench.class, CrossHostBench.class})
    void everyOptionsDescriptionIsAValidFormat(Class<?> command) {
        int options = 0;
        for (Field f : command.getDeclaredFields()) {
            Option o = f.getAnnotation(Option.class);
            if (o == null) {
                continue;
            }
            options++;
            for (String line : o.description()) {
                try {
                    String.format(Locale.ROOT, line);
                } catch (IllegalFormatException e) {
                    throw new AssertionError(f.getName() + "'s description is no format: " + line, e);
                }
            }
        }
        assertTrue(options > 5, "read " + options + " options of " + command.getSimpleName());
    }

    @ParameterizedTest
    @ValueSource(classes = {Bench.class, CrossHostBench.class})
    void theHelpShowsThePercentSignOnce(Class<?> command) throws ReflectiveOperationException {
        String usage = new CommandLine(command.getDeclaredConstructor().newInstance()).getUsageMessage();
        assertTrue(usage.contains("95 % interval"), usage);
        assertFalse(usage.contains("%%"), usage);
    }
}
