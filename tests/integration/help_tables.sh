#!/usr/bin/env bash
# Help lists what the program does (issue 47): flashbed --help names the
# same commands and subcommands as README's commands table, each way, and
# convert --help names every architecture the importers accept (as their
# refusals list them: the same tables dispatch both).
source "$(dirname "$0")/lib.sh"
README="$FLASHBED_SOURCE/README.md"

help=$("$FLASHBED" --help)
check "flashbed --help exits 0" test $? -eq 0
# README's rows: "| `trace` | ... |" between "## The commands" and the next heading.
rows=$(awk '/^## The commands/ {on = 1; next} on && /^## / {on = 0} on && /^\| `/' "$README")
check "README has a commands table" test -n "$rows"
readme_cmds=$(sed -E 's/^\| `([^`]*)`.*/\1/' <<<"$rows")
# help's lines: "  NAME  summary" (a command), "    NAME SUB  summary" (a subcommand).
help_top=$(sed -nE 's/^  ([a-z-]+)( .*)?$/\1/p' <<<"$help" | grep -v -- '^--')
help_sub=$(sed -nE 's/^    ([a-z-]+ [a-z-]+)( .*)?$/\1/p' <<<"$help")
check "help lists subcommands" test -n "$help_sub"

# Every README row is in help: "X" a command, "X Y" a subcommand.
while IFS= read -r c; do
    [ -n "$c" ] || continue
    if [[ $c == *" "* ]]; then
        check "README's '$c' is a subcommand in flashbed --help" grep -qxF -- "$c" <<<"$help_sub"
    else
        check "README's '$c' is a command in flashbed --help" grep -qxF -- "$c" <<<"$help_top"
    fi
done <<<"$readme_cmds"

# Every help entry is in README: a command as its row (one with
# subcommands is covered by theirs), a subcommand as its row or named in
# backquotes on its command's row.
while IFS= read -r c; do
    [ -n "$c" ] || continue
    if ! grep -q "^$c " <<<"$help_sub"; then
        check "flashbed --help's '$c' is a row of README's table" grep -qxF -- "$c" <<<"$readme_cmds"
    fi
done <<<"$help_top"
while IFS= read -r c; do
    [ -n "$c" ] || continue
    cmd=${c% *} sub=${c#* }
    row=$(grep -F "| \`$cmd\` |" <<<"$rows")
    check "flashbed --help's '$c' is in README's table" \
        bash -c 'grep -qxF -- "$1" <<<"$2" || grep -qF -- "\`$3\`" <<<"$4"' _ "$c" "$readme_cmds" "$sub" "$row"
done <<<"$help_sub"

# Every subcommand's own --help works, and COMMAND --help lists them all.
while IFS= read -r c; do
    [ -n "$c" ] || continue
    check "flashbed $c --help exits 0" bash -c '"$1" $2 --help >/dev/null' _ "$FLASHBED" "$c"
    check "flashbed ${c% *} --help names $c" bash -c '"$1" "${2% *}" --help | grep -qF "flashbed $2 "' \
        _ "$FLASHBED" "$c"
done <<<"$help_sub"

# ---- convert --help names every architecture convert accepts
conv=$("$FLASHBED" convert --help)
mkdir -p "$WORK/hf"
echo '{"model_type": "no-such-arch"}' >"$WORK/hf/config.json"
err=$("$FLASHBED" convert "$WORK/hf" --out "$WORK/out-hf" 2>&1)
hf_list=$(sed -nE 's/.*model_type "no-such-arch" is not supported \((.*)\)$/\1/p' <<<"$err")
check "a folder of no known model_type lists those there are: $err" test -n "$hf_list"
# A GGUF v3 file with no tensors and one key, general.architecture "no-such-arch".
python3 - "$WORK/x.gguf" <<'EOF'
import struct, sys
key, val = b"general.architecture", b"no-such-arch"
body = struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key + struct.pack("<IQ", 8, len(val)) + val
open(sys.argv[1], "wb").write(b"GGUF" + body)
EOF
err=$("$FLASHBED" convert "$WORK/x.gguf" --out "$WORK/out-gguf" 2>&1)
gguf_list=$(sed -nE 's/.*general.architecture "no-such-arch" is not supported \((.*)\)$/\1/p' <<<"$err")
check "a GGUF of no known architecture lists those there are: $err" test -n "$gguf_list"
flat=$(tr '\n' ' ' <<<"$conv" | tr -s ' ')
for a in $(tr ',' ' ' <<<"$hf_list $gguf_list"); do
    check "convert --help names '$a'" grep -qE "(^|[ (])$a([ ,;)]|$)" <<<"$flat"
done
# and README's convert row's families, by name
for name in Mistral Qwen2 Qwen3 Phi-3 TurboSparse-Mistral OPT Falcon Persimmon gemma3; do
    check "convert --help names $name, as README does" grep -qF "$name" <<<"$flat"
done
finish
