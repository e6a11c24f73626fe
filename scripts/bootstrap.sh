# bootstrap.sh — sourced by ./train and ./tests/run (POSIX sh).
#
# attnlab_bootstrap ROOT [extra optional packages…]   (ROOT: the repository folder)
#   AB_BUILD (default ROOT/build) and AB_CMAKE_ARGS (extra cmake -D… options, e.g. the
#   sanitizer build of tests/run --sanitize) select another build folder.
#   ATTNLAB_WERROR (ON/OFF; .ci/run sets ON) is passed on as -DATTNLAB_WERROR, also to
#   a build folder configured earlier without it; unset, the CMake default (OFF) holds.
#   1. finds what the build needs (cmake, a C compiler, make, pkg-config,
#      OpenBLAS and cJSON development files); when something is missing it
#      installs the Debian packages if we are root, else prints the exact
#      apt-get line and fails;
#   2. optional packages (e.g. python3-torch for the parity test) are installed
#      when root and otherwise only mentioned;
#   3. configures build/ in Release on first use and rebuilds incrementally.
# Build output goes to build/build.log; it is shown only when the build fails.

ab_say() { printf 'attnlab: %s\n' "$*" >&2; }

ab_missing_packages() {
    missing=""
    command -v cmake >/dev/null 2>&1 || missing="$missing cmake"
    command -v cc >/dev/null 2>&1 || missing="$missing gcc libc6-dev"
    command -v make >/dev/null 2>&1 || missing="$missing make"
    if command -v pkg-config >/dev/null 2>&1; then
        pkg-config --exists openblas 2>/dev/null || missing="$missing libopenblas-dev"
        pkg-config --exists libcjson 2>/dev/null || missing="$missing libcjson-dev"
    else
        missing="$missing pkg-config libopenblas-dev libcjson-dev"
    fi
    printf '%s' "$missing"
}

ab_apt_install() {
    ab_say "installing Debian packages:$*"
    ab_say "+ apt-get update"
    apt-get update -qq >&2 || return 1
    ab_say "+ apt-get install -y$*"
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $* >&2 || return 1
}

ab_is_root() { [ "$(id -u)" = 0 ]; }

attnlab_bootstrap() {
    ab_root=$1
    shift
    need=$(ab_missing_packages)
    optional=""
    for pkg in "$@"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || optional="$optional $pkg"
    done
    fresh_optional=""
    if [ -n "$need" ]; then
        if ab_is_root; then
            ab_apt_install $need $optional || { ab_say "apt-get failed (see above)"; return 1; }
            fresh_optional=$optional
            optional=""
        else
            ab_say "missing build dependencies. Install them with:"
            printf '  sudo apt-get install -y%s\n' "$need" >&2
            return 1
        fi
    fi
    if [ -n "$optional" ]; then
        if ab_is_root; then
            if ab_apt_install $optional; then fresh_optional=$optional
            else ab_say "could not install optional packages:$optional (continuing)"; fi
        else
            ab_say "optional packages not installed:$optional (sudo apt-get install -y$optional)"
        fi
    fi
    build=${AB_BUILD:-$ab_root/build}
    ab_args=${AB_CMAKE_ARGS:-}
    [ -n "${ATTNLAB_WERROR:-}" ] && ab_args="${ab_args:+$ab_args }-DATTNLAB_WERROR=$ATTNLAB_WERROR"
    # Two ./train (or ./tests/run) started together would configure and build
    # the same folder at once and break each other's build: one builds, the
    # other waits.  The lock lives in a subshell so the trainer does not
    # inherit it.
    mkdir -p "$build" || { ab_say "cannot create $build"; return 1; }
    if command -v flock >/dev/null 2>&1; then
        (
            if ! flock -n 9; then
                ab_say "waiting for another build of $build to finish"
                flock 9 || exit 1
            fi
            ab_build "$ab_root" "$build" "$ab_args" "$fresh_optional"
        ) 9>"$build/.build.lock"
    else
        ab_build "$ab_root" "$build" "$ab_args" "$fresh_optional"
    fi
}

# ab_build ROOT BUILD CMAKE_ARGS FRESH_OPTIONAL: configure on first use, then
# build incrementally (called with the build folder's lock held).
ab_build() {
    ab_root=$1 build=$2 ab_args=$3 fresh_optional=$4
    if [ -f "$build/CMakeCache.txt" ] && [ ! -f "$build/Makefile" ]; then
        # A configure that failed earlier (e.g. run by hand before the packages
        # were installed) leaves a cache but no Makefile: start that folder over.
        ab_say "$build holds a failed configure; configuring it again"
        rm -f "$build/CMakeCache.txt"
    fi
    if [ ! -f "$build/CMakeCache.txt" ]; then
        ab_say "configuring $build (Release${ab_args:+ $ab_args})"
        # shellcheck disable=SC2086
        cmake -S "$ab_root" -B "$build" -DCMAKE_BUILD_TYPE=Release $ab_args >"$ab_root/build.configure.log" 2>&1 || {
            cat "$ab_root/build.configure.log" >&2; rm -rf "$build"; ab_say "cmake configure failed"; return 1; }
        mv "$ab_root/build.configure.log" "$build/configure.log"
        ab_say "building (first build takes a minute)"
    elif [ -n "$fresh_optional" ]; then
        # An existing build dir cached "MPI not found": forget that, so the newly
        # installed optional packages are detected.
        cmake -U 'MPI_*' -S "$ab_root" -B "$build" >"$build/configure.log" 2>&1 || {
            cat "$build/configure.log" >&2; ab_say "cmake re-configure failed"; return 1; }
    fi
    if [ -n "${ATTNLAB_WERROR:-}" ] && ! grep -qx "ATTNLAB_WERROR:BOOL=$ATTNLAB_WERROR" "$build/CMakeCache.txt"; then
        ab_say "setting ATTNLAB_WERROR=$ATTNLAB_WERROR in $build"
        cmake -DATTNLAB_WERROR="$ATTNLAB_WERROR" -S "$ab_root" -B "$build" >"$build/configure.log" 2>&1 || {
            cat "$build/configure.log" >&2; ab_say "cmake re-configure failed"; return 1; }
    fi
    jobs=$(nproc 2>/dev/null || echo 2)
    cmake --build "$build" -j "$jobs" >"$build/build.log" 2>&1 || {
        cat "$build/build.log" >&2; ab_say "build failed (log: build/build.log)"; return 1; }
    return 0
}
