#!/bin/sh
# The Neovim test of keet lsp (tests/lsp/nvim_test.lua): writes the report of
# KEET's transpose example (and the same built without -lineinfo), runs
# headless Neovim on the example source with keet lsp attached, and prints
# what the client saw. keet's cache (the knowledge entries, HTML reports) goes
# under OUT_DIR. Exit 77 (skipped) when
# Neovim is not installed (scripts/bootstrap installs Debian's neovim).
# usage: nvim_test.sh KEET WRITE_TEST_REPORT SOURCE OUT_DIR
set -eu
keet=$1 writer=$2 source=$3 out=$4
command -v nvim >/dev/null || { echo "SKIPPED: nvim is not installed (scripts/bootstrap installs neovim)"; exit 77; }
mkdir -p "$out"
report="$out/lsp-transpose.ncu-rep" result="$out/nvim-lsp.json"
bare="$out/lsp-transpose-no-lineinfo.ncu-rep"
rm -f "$result"
"$writer" --transpose-example "$source" "$report"
"$writer" --transpose-example-without-lineinfo "$source" "$bare"
# No user or system configuration, no shada or swap files: the test sees only
# Neovim's own LSP client.
KEET="$keet" KEET_REPORT="$report" KEET_REPORT_NO_LINEINFO="$bare" XDG_CACHE_HOME="$out/nvim-lsp-cache" KEET_SOURCE="$source" KEET_RESULT="$result" \
  timeout 120 nvim --headless --clean -n -i NONE -u NONE \
  -c "luafile $(dirname "$0")/nvim_test.lua" </dev/null
status=$?
[ -f "$result" ] && cat "$result" && echo
exit $status
