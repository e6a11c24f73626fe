#!/bin/sh
# layers.sh — every #include points down the module layers of docs/layers.txt (the
# one place the order is written; that file says what the layers are).
#   sh tests/layers.sh [ROOT]     scans ROOT/src and ROOT/include/attnlab (ROOT
#                                 default: the repository); exit 1 when an include
#                                 points up or leaves the modules, naming file:line
#                                 and both modules
#   sh tests/layers.sh --must-fail FIXTURE
#                                 the check of the check: layers.sh FIXTURE must exit
#                                 1 and print every line of FIXTURE/expected.txt
#                                 (tests/layers_fixture holds one of each fault)
# What is an include of module M: "attnlab/M/…" (quotes or angle brackets); a
# relative "../M/x.h" or "dir/x.h", resolved against the including file's folder to
# src/M/… or include/attnlab/M/…; a bare "x.h" is the including file's own folder
# (the generated attnlab_build_info.h included). A file's module is its folder
# under src/ or include/attnlab/.
here=$(cd "$(dirname "$0")" && pwd)
layers="$here/../docs/layers.txt"

if [ "$1" = "--must-fail" ]; then
    out=$(sh "$0" "$2" 2>&1)
    rc=$?
    failures=0
    [ "$rc" -eq 1 ] || { echo "FAIL: layers.sh $2 exited $rc, expected 1"; failures=$((failures + 1)); }
    while IFS= read -r want; do
        case "$out" in
            *"$want"*) ;;
            *) echo "FAIL: layers.sh $2 did not print: $want"; failures=$((failures + 1)) ;;
        esac
    done < "$2/expected.txt"
    echo "$out" | sed 's/^/  | /'
    echo "layers --must-fail: $failures failed"
    [ "$failures" -eq 0 ]
    exit
fi

root=${1:-$here/..}
cd "$root" || exit 2
[ -r "$layers" ] || { echo "layers: cannot read $layers"; exit 2; }
files=$(find src include/attnlab -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' \) 2>/dev/null | sort)
[ -n "$files" ] || { echo "layers: no sources under $root/src or $root/include/attnlab"; exit 2; }

# shellcheck disable=SC2086  # the file list splits on whitespace: no path has any
awk -v layers_file="docs/layers.txt" '
# a/b/../c → a/c; "." dropped; "" when it climbs out of the tree.
function normalize(path,    n, parts, out, k, i) {
    n = split(path, parts, "/")
    k = 0
    for (i = 1; i <= n; i++) {
        if (parts[i] == "." || parts[i] == "") continue
        if (parts[i] == "..") { if (k == 0) return ""; k--; continue }
        out[++k] = parts[i]
    }
    path = ""
    for (i = 1; i <= k; i++) path = path (i > 1 ? "/" : "") out[i]
    return path
}
# The module of a path relative to the root: src/M/… or include/attnlab/M/…; ""
# otherwise.  Sets in_module to the rest, M/…, as an "attnlab/" include names it.
function module_of(path,    parts, n) {
    n = split(path, parts, "/")
    in_module = path
    if (parts[1] == "src" && n >= 3) { sub(/^src\//, "", in_module); return parts[2] }
    if (parts[1] == "include" && parts[2] == "attnlab" && n >= 4) { sub(/^include\/attnlab\//, "", in_module); return parts[3] }
    return ""
}
function fail(msg) { print FILENAME ":" FNR ": " msg; bad++ }
FNR == 1 && NR != FNR {
    from = module_of(FILENAME)
    if (!(from in rank)) fail("the module of this file, \"" from "\", is not in " layers_file)
}
NR == FNR {   # docs/layers.txt
    if ($0 ~ /^[ \t]*(#|$)/) next
    if ($1 == "allow" && NF == 3) { allowed[$2 SUBSEP $3] = 1; next }
    if (NF != 1 || $1 in rank) { print layers_file ":" FNR ": cannot read this line"; bad++; next }
    rank[$1] = ++n_layers
    next
}
/^[ \t]*#[ \t]*include[ \t]*["<]/ {
    line = $0
    sub(/^[ \t]*#[ \t]*include[ \t]*/, "", line)
    quoted = substr(line, 1, 1) == "\""
    target = substr(line, 2)
    sub(/[">].*/, "", target)
    if (target ~ /^attnlab\//) {
        header = substr(target, 9)
        to = header ~ /\// ? header : ""
        sub(/\/.*/, "", to)
    } else if (quoted && target ~ /\//) {
        dir = FILENAME
        sub(/\/[^\/]*$/, "", dir)
        resolved = normalize(dir "/" target)
        to = module_of(resolved)
        if (to == "") { fail("\"" target "\" leaves the modules (" (resolved == "" ? "above the root" : resolved) ")"); next }
        header = in_module
    } else {
        next   # <system.h>, or a header in the folder of the including file
    }
    if (to == "" || !(to in rank)) { fail("\"" target "\": module \"" to "\" is not in " layers_file); next }
    if (!(from in rank) || rank[to] <= rank[from]) next
    if (((FILENAME SUBSEP header) in allowed) || (("*" SUBSEP header) in allowed)) next
    fail(from " includes " to " (\"" target "\"), but " from " is below " to " in " layers_file)
}
END {
    if (bad) print "layers: " bad " problem" (bad == 1 ? "" : "s") " (fix the include, or move the code to the module it belongs to)"
    else print "layers: every include points down"
    exit bad ? 1 : 0
}
' "$layers" $files
