# Shared helpers for integration tests: $1 is the flashbed binary, $2 a
# scratch folder owned by the test (emptied first).
set -u
FLASHBED=$1
WORK=$2
rm -rf "$WORK"
mkdir -p "$WORK"
failures=0
checks=0

# Skips the test (exit 77, CTest's "skipped") unless the shared data holds
# stories260K's checkpoint and tokenizer; sets SRC to their folder.
need_stories260k() {
    SRC="$FLASHBED_DATA/models/stories260K"
    if [ ! -f "$SRC/stories260K.bin" ] || [ ! -f "$SRC/tok512.bin" ]; then
        echo "skipped: stories260K not found under FLASHBED_DATA=$FLASHBED_DATA"
        exit 77
    fi
}

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

check() { # description, then a command that must succeed
    local what=$1
    shift
    checks=$((checks + 1))
    if ! "$@"; then fail "$what"; fi
}

# Runs flashbed expecting a non-zero exit; the error line must contain $2.
# RUN_ENV (e.g. "PATH=/empty") is passed to flashbed alone; with EXPECT_RC
# set, the exit status must be that (2: a command line the parser refused).
expect_error() {
    local what=$1 pattern=$2
    shift 2
    checks=$((checks + 1))
    local out rc
    out=$(env ${RUN_ENV:-} "$FLASHBED" "$@" 2>&1 >/dev/null)
    rc=$?
    if [ $rc -eq 0 ]; then
        fail "$what: exit 0, expected an error"
    elif [ $rc -gt 128 ]; then
        fail "$what: crashed with signal $((rc - 128))"
    elif [ -n "${EXPECT_RC:-}" ] && [ $rc -ne "$EXPECT_RC" ]; then
        fail "$what: exit $rc, expected $EXPECT_RC"
    elif ! grep -q -- "$pattern" <<<"$out"; then
        fail "$what: error did not mention '$pattern': $out"
    elif [ "$(grep -c 'error' <<<"$out")" -lt 1 ]; then
        fail "$what: no error line: $out"
    fi
}

# JSON helpers use python3 when present (CI machines have it); jq otherwise.
json_get() { # file, python expression over d
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

# The first of PATH's python3 and Debian's /usr/bin/python3 (PATH's may be
# a pyenv one without Debian's packages) that runs the statement $1
# without error, on stdout; status 1 when neither does.
python_that() {
    local py
    for py in python3 /usr/bin/python3; do
        if command -v "$py" > /dev/null 2>&1 && "$py" -c "$1" > /dev/null 2>&1; then
            echo "$py"
            return 0
        fi
    done
    return 1
}

finish() {
    echo "$(basename "$0"): $checks checks, $failures failed"
    [ $failures -eq 0 ]
    exit $?
}
