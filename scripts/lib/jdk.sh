# Sourced by the project's scripts: exports JAVA_HOME pointing at a JDK 25 or newer.
# Order: an existing JAVA_HOME that is new enough, then the usual Debian/Temurin install places.

rdmaflux_java_feature() {
    # Prints the feature release (e.g. 25) of the java binary $1, or nothing.
    "$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p' | head -1
}

rdmaflux_find_jdk() {
    local candidate v
    for candidate in ${JAVA_HOME:+"$JAVA_HOME"} /usr/lib/jvm/temurin-2[5-9]* /usr/lib/jvm/jdk-2[5-9]* /usr/lib/jvm/java-2[5-9]*; do
        [ -x "$candidate/bin/java" ] || continue
        v=$(rdmaflux_java_feature "$candidate/bin/java")
        if [ -n "$v" ] && [ "$v" -ge 25 ]; then
            export JAVA_HOME="$candidate"
            return 0
        fi
    done
    echo "rdmaflux needs JDK 25 or newer: set JAVA_HOME to one (looked in \$JAVA_HOME and /usr/lib/jvm/{temurin,jdk,java}-25*)." >&2
    return 1
}
