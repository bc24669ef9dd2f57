# Sourced by scripts/sample, scripts/demo and scripts/bench: builds the modules when what they would
# run is missing or older than the sources, so a `git pull` or an edit is never run stale.

# Prints the first source or build file newer than the samples' run-time class path, or nothing.
rdmaflux_stale_source() {
    local stamp=samples/target/runtime-classpath.txt
    if [ ! -f "$stamp" ] || [ ! -d samples/target/classes ]; then
        echo "(never built)"
        return
    fi
    find pom.xml verbs cm-reactive metrics samples \
        \( -path '*/target' -prune \) -o \
        \( -name pom.xml -o -path '*/src/main/*' \) -type f -newer "$stamp" -print -quit 2>/dev/null || true
}

# Builds (package, no tests, no javadoc) when stale, printing Maven's module progress as it goes.
rdmaflux_build_if_stale() {
    local why
    why=$(rdmaflux_stale_source)
    [ -n "$why" ] || return 0
    echo "build: $why is newer than the last build: ./mvnw package -DskipTests (a first build downloads dependencies and takes a few minutes)" >&2
    local log rc
    log=$(mktemp)
    set +e
    ./mvnw -B -ntp package -DskipTests -Dmaven.javadoc.skip=true -Dmaven.source.skip=true 2>&1 \
        | tee "$log" | grep --line-buffered -E '^\[INFO\] Building rdmaflux|BUILD (SUCCESS|FAILURE)|^\[ERROR\]' >&2
    rc=${PIPESTATUS[0]}
    set -e
    if [ "$rc" -ne 0 ]; then
        echo "build: failed; the whole Maven output is in $log" >&2
        return "$rc"
    fi
    rm -f "$log"
    # package rewrites runtime-classpath.txt only when its content changes: mark this build.
    touch samples/target/runtime-classpath.txt
}
