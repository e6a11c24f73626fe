#!/bin/sh
# results_in_git.sh — what results/ may keep in git (results/README.md: What is kept
# in git): no training state, no sweep cell's checkpoint and no unfinished grid's
# journal is tracked, every tracked .safetensors is a final model listed in
# results/README.md, and the tracked files
# of results/ stay under 30 MB (a sweep once committed 176 MB of checkpoints).
#   sh tests/results_in_git.sh REPO     exits 77 (skipped) outside a git checkout
repo=${1:-.}
cd "$repo" || exit 2
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "results_in_git: skipped (not a git checkout)"; exit 77; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
states=$(git ls-files 'results/*train_state.safetensors' | head -n 5)
[ -z "$states" ] || fail "training states are tracked: $states"
cells=$(git ls-files 'results/*/cells/*.safetensors' | head -n 5)
[ -z "$cells" ] || fail "sweep cell checkpoints are tracked: $cells"
for f in $(git ls-files 'results/*.safetensors'); do
    grep -qF "\`${f#results/}\`" results/README.md || fail "$f is tracked but not listed in results/README.md"
done
scripts/models_table | cmp -s - results/models.md ||
    fail "results/models.md is stale: run scripts/models_table > results/models.md && scripts/readme_include results/README.md"
bytes=$(git ls-files -z results | xargs -0 cat 2>/dev/null | wc -c)
[ "$bytes" -lt 31457280 ] || fail "tracked results/ holds $bytes bytes (limit 30 MB)"
# A new training state under results/ must be ignored, not offered to git add.
git check-ignore -q results/x/train_state.safetensors || fail ".gitignore does not keep training states out"
git check-ignore -q results/x/cells/y/model.safetensors || fail ".gitignore does not keep cell checkpoints out"
git check-ignore -q results/x/anna_grid.journal || fail ".gitignore does not keep unfinished grids' journals out"
journals=$(git ls-files "results/*anna_grid.journal" | head -n 5)
[ -z "$journals" ] || fail "unfinished grids' journals are tracked: $journals"
echo "results_in_git: $bytes bytes tracked under results/, $failures failed"
[ "$failures" -eq 0 ]
