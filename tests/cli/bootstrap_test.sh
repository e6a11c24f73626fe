#!/bin/sh
# bootstrap_test.sh — the launcher's answer when build tools are missing and the
# user is not root: the exact apt-get line on stderr, exit status 1, nothing built.
# Runs the real ./train as user 'nobody' (when we are root) with a PATH that hides
# cmake (case 1) or pkg-config (case 2).  The launcher files are copied into a
# world-readable sandbox, so 'nobody' can run them wherever the checkout lives.
src=$(cd "$(dirname "$0")/../.." && pwd)
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
chmod 755 "$fake"
root="$fake/repo"
mkdir -p "$root/tests" "$root/scripts"
cp "$src/train" "$src/CMakeLists.txt" "$root/"
cp "$src/tests/run" "$root/tests/"
cp "$src/scripts/bootstrap.sh" "$root/scripts/"
chmod -R a+rX "$root"
fails=0; checks=0

make_path() {   # make_path DIR TOOL… — symlinks to the named tools only
    dir=$1; shift
    mkdir -p "$dir"
    for tool in "$@"; do
        p=$(command -v "$tool") && ln -sf "$p" "$dir/$tool"
    done
}

as_user() {     # as_user PATH COMMAND… — runs without root when we have it
    if [ "$(id -u)" = 0 ]; then
        runuser -u nobody -- env PATH="$1" HOME=/tmp sh -c 'shift; exec "$@"' _ "$@"
    else
        env PATH="$1" sh -c 'shift; exec "$@"' _ "$@"
    fi
}

expect() {      # expect NAME RC OUT WANT
    checks=$((checks + 1))
    if [ "$2" != 1 ] || ! printf '%s' "$3" | grep -qF -- "$4"; then
        echo "FAIL $1: exit $2 (want 1), output lacks '$4':"; printf '%s\n' "$3"
        fails=$((fails + 1))
    else
        echo "ok   $1"
    fi
}

base="sh dirname id cat printf grep dpkg nproc cc make mkdir mv rm"
make_path "$fake/no_cmake" $base pkg-config
out=$(as_user "$fake/no_cmake" sh "$root/train" --help 2>&1); rc=$?
expect "no cmake" "$rc" "$out" "sudo apt-get install -y cmake"

make_path "$fake/no_pkgconfig" $base cmake
out=$(as_user "$fake/no_pkgconfig" sh "$root/train" --help 2>&1); rc=$?
expect "no pkg-config" "$rc" "$out" "sudo apt-get install -y pkg-config libopenblas-dev libcjson-dev"

out=$(as_user "$fake/no_cmake" sh "$root/tests/run" 2>&1); rc=$?
expect "tests/run without cmake" "$rc" "$out" "sudo apt-get install -y cmake"
checks=$((checks + 1))
if printf '%s\n' "$out" | tail -n 1 | grep -qx '0 passed, 1 failed'; then echo "ok   tests/run ends with its count line"
else echo "FAIL tests/run's last line: $(printf '%s\n' "$out" | tail -n 1)"; fails=$((fails + 1)); fi

# A configure run by hand before the packages were there leaves build/ with a cache
# but no Makefile; the launcher must configure again instead of failing in make.
# (The sandbox holds no sources, so that configure fails too: its message is the check.)
mkdir -p "$root/build" && : >"$root/build/CMakeCache.txt"
out=$(env -u AB_BUILD -u AB_CMAKE_ARGS sh "$root/train" --help 2>&1); rc=$?   # (tests/run --sanitize sets them)
expect "failed configure left in build/" "$rc" "$out" "holds a failed configure; configuring it again"

echo "bootstrap_test: $checks checks, $fails failed"
[ "$fails" = 0 ]
