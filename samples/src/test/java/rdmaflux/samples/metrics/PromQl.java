package rdmaflux.samples.metrics;

import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Pulls the metric names out of a PromQL expression, for checking a dashboard against what is exported. */
final class PromQl {
    private static final Pattern STRING = Pattern.compile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'");
    private static final Pattern MATCHERS = Pattern.compile("\\{[^}]*}");
    private static final Pattern RANGE = Pattern.compile("\\[[^]]*]");
    private static final Pattern GROUPING = Pattern.compile(
            "\\b(by|without|on|ignoring|group_left|group_right)\\s*\\([^)]*\\)");
    private static final Pattern VARIABLE = Pattern.compile("\\$\\{[^}]*}|\\$[A-Za-z_][A-Za-z0-9_]*");
    private static final Pattern TOKEN = Pattern.compile(
            "(?<num>(?:\\d+(?:ms|[smhdwy]))+\\b|\\d+(?:\\.\\d+)?(?:[eE][-+]?\\d+)?)|(?<id>[A-Za-z_:][A-Za-z0-9_:]*)(?<call>\\s*\\()?");
    private static final Set<String> KEYWORDS = Set.of("by", "without", "on", "ignoring", "group_left",
            "group_right", "offset", "bool", "and", "or", "unless", "inf", "nan", "atan2");

    private PromQl() {
    }

    /** @return the metric names {@code expr} selects; functions, keywords, labels and variables excluded */
    static Set<String> metricNames(String expr) {
        String e = STRING.matcher(expr).replaceAll(" ");
        e = MATCHERS.matcher(e).replaceAll(" ");
        e = RANGE.matcher(e).replaceAll(" ");
        e = GROUPING.matcher(e).replaceAll(" ");
        e = VARIABLE.matcher(e).replaceAll(" ");
        Set<String> names = new TreeSet<>();
        Matcher m = TOKEN.matcher(e);
        while (m.find()) {
            String id = m.group("id");
            if (id == null || m.group("call") != null || KEYWORDS.contains(id.toLowerCase(java.util.Locale.ROOT))) {
                continue; // a number, a function call, or a keyword
            }
            names.add(id);
        }
        return names;
    }
}
