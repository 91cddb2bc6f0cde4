#!/usr/bin/env bash
# README.md's examples run as they stand. Every block fenced ```sh in
# README.md and docs/*.md is a runnable example; a block that is not to be
# run is fenced ```text (or another tag). Each file's ```sh blocks run in
# order, each with `bash -e -o pipefail`, in a scratch folder laid out as a
# fresh clone after the set-up: build/ is the build under test (so
# `build/flashbed` is the binary CTest hands us, the ASan one in the ASan
# build), tools/, python/, configs/ and plots/ the source tree's, results/
# empty, and ../shared/data the shared data; one folder per Markdown file,
# so a file's later blocks may use what its earlier ones wrote. A block that
# fails is named by file and line, with its output, and stops its file; a
# block that reads ../shared/data is skipped, saying so, without the data.
# The runner is also fed a made-up file whose ```sh block fails and whose
# ```text block would, so that a broken extraction cannot pass.
source "$(dirname "$0")/lib.sh"
if ! command -v fio > /dev/null 2>&1; then
    echo "skipped: fio is not installed (README's sweep example runs it; tools/install-deps.sh installs it)"
    exit 77
fi
BUILD_DIR=$(cd "$(dirname "$FLASHBED")" && pwd)

# A scratch clone for one Markdown file: $1/repo, with ../shared/data beside it.
make_clone() {
    mkdir -p "$1/repo/results" "$1/shared"
    ln -s "$BUILD_DIR" "$1/repo/build"
    local d
    for d in tools python configs plots; do ln -s "$FLASHBED_SOURCE/$d" "$1/repo/$d"; done
    if [ -d "${FLASHBED_DATA:-}" ]; then ln -s "$FLASHBED_DATA" "$1/shared/data"; fi
}

# Writes each ```sh block of $1 to $2/block-N.sh, its first line's number to
# $2/block-N.line; prints the number of blocks.
extract_blocks() {
    awk -v dir="$2" '
        /^```/ {
            if (inside) { inside = 0; next }
            if (other) { other = 0; next }
            if ($0 ~ /^```sh[[:space:]]*$/) { inside = 1; n++; print NR + 1 > (dir "/block-" n ".line"); next }
            other = 1; next
        }
        inside { print > (dir "/block-" n ".sh") }
        END { print n + 0 }' "$1"
}

# Runs the ```sh blocks of Markdown file $1 in a scratch clone $2; status 1
# at the first block that fails, which is reported with its output.
run_markdown() {
    local md=$1 scratch=$2 name
    name=$(basename "$md")
    make_clone "$scratch"
    mkdir -p "$scratch/blocks"
    local n i line start rc
    n=$(extract_blocks "$md" "$scratch/blocks")
    for ((i = 1; i <= n; i++)); do
        line=$(cat "$scratch/blocks/block-$i.line")
        if grep -q '\.\./shared/data' "$scratch/blocks/block-$i.sh" && [ ! -e "$scratch/shared/data" ]; then
            echo "$name: block at line $line: skipped: it reads ../shared/data, and FLASHBED_DATA=${FLASHBED_DATA:-} is absent"
            continue
        fi
        start=$(date +%s)
        (cd "$scratch/repo" && bash -e -o pipefail "$scratch/blocks/block-$i.sh") > "$scratch/blocks/block-$i.log" 2>&1
        rc=$?
        echo "$name: block at line $line: exit $rc, $(($(date +%s) - start)) s"
        if [ $rc -ne 0 ]; then
            echo "---- $name, line $line:" >&2
            cat "$scratch/blocks/block-$i.sh" >&2
            echo "---- its output (last 40 lines):" >&2
            tail -n 40 "$scratch/blocks/block-$i.log" >&2
            return 1
        fi
    done
    echo "$n" > "$scratch/blocks/count"
}

# The runner itself: a ```sh block that fails is caught, a ```text one is not run.
cat > "$WORK/fake.md" <<'EOF'
# fake
```text
false
```
```sh
echo ran > results/first.txt
```
```sh
test -f results/first.txt
false
```
EOF
run_markdown "$WORK/fake.md" "$WORK/fake" > "$WORK/fake.out" 2>&1
rc=$?
check "a failing block fails the file" test $rc -ne 0
check "the failing block is named by its line" grep -q '^fake.md: block at line 9: exit 1' "$WORK/fake.out"
check "the earlier block ran in the same clone" test -f "$WORK/fake/repo/results/first.txt"
check "the text block was not run" test "$(grep -c 'block at line' "$WORK/fake.out")" -eq 2

# GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, spaces to -.
anchor_of() {
    sed -E 's/^#+ +//' <<<"$1" | tr '[:upper:]' '[:lower:]' | sed -E 's/[^a-z0-9 _-]//g; s/ /-/g'
}

# Every relative link of Markdown file $1 ([text](path), [text](path#anchor),
# [text](#anchor)) names a file that exists and, with an anchor, one of its
# headings; prints each broken link, status 1 if any.
links_resolve() {
    local md=$1 dir link path frag broken=0
    dir=$(dirname "$md")
    while IFS= read -r link; do
        case $link in http*|mailto:*) continue ;; esac
        path=${link%%#*}
        frag=
        [[ $link == *#* ]] && frag=${link#*#}
        [ -z "$path" ] && path=$(basename "$md")
        if [ ! -e "$dir/$path" ]; then
            echo "$md: link to $link: no file $path"; broken=1; continue
        fi
        if [ -n "$frag" ] && ! grep -E '^#+ ' "$dir/$path" | while IFS= read -r h; do anchor_of "$h"; done |
            grep -qx -- "$frag"; then
            echo "$md: link to $link: no heading with that anchor in $path"; broken=1
        fi
    done < <(grep -o '\]([^)]*)' "$md" | sed -E 's/^\]\(//; s/\)$//')
    return $broken
}

check "the link checker finds a missing file and a missing anchor" \
    bash -c "$(declare -f anchor_of links_resolve); printf '[a](nowhere.md) [b](#no-such) [c](#here)\n# Here\n' > '$WORK/links.md';
             ! links_resolve '$WORK/links.md' > '$WORK/links.out' && test \$(grep -c . '$WORK/links.out') -eq 2"
check "the link checker follows a good link" bash -c "$(declare -f anchor_of links_resolve);
    printf '[a](#the-commands-here)\n## The commands: here\n' > '$WORK/links2.md'; links_resolve '$WORK/links2.md'"
for md in "$FLASHBED_SOURCE/README.md" "$FLASHBED_SOURCE"/docs/*.md; do
    check "$(basename "$md")'s relative links resolve" links_resolve "$md"
done

# README's examples: the quick start's three uses, in order.
check "README.md's examples run" run_markdown "$FLASHBED_SOURCE/README.md" "$WORK/README"
check "README.md has at least the quick start's three blocks" \
    test "$(cat "$WORK/README/blocks/count" 2>/dev/null || echo 0)" -ge 3
check "README's run recorded a trace" test -s "$WORK/README/repo/results/opt-tiny.trace"
check "README's compare was written" test -s "$WORK/README/repo/results/compare-lru/predict.json"

# docs/: the blocks marked runnable (```sh); the rest are fenced ```text.
ran_docs=0
for md in "$FLASHBED_SOURCE"/docs/*.md; do
    if grep -q '^```sh[[:space:]]*$' "$md"; then
        check "docs/$(basename "$md")'s examples run" run_markdown "$md" "$WORK/docs-$(basename "$md" .md)"
        ran_docs=$((ran_docs + 1))
    fi
done
check "docs/ has runnable examples" test $ran_docs -ge 1
finish
