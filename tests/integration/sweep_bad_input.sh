#!/usr/bin/env bash
# Every bad input exits non-zero with a clear one-line error and leaves no
# result file behind.
source "$(dirname "$0")/lib.sh"

DATA="$WORK/data.bin"
OUT="$WORK/out"
base=(sweep --file "$DATA" --size 4m --chunks 4k --threads 1 --runtime 0.05 --ramp 0 --out "$OUT")

expect_error "malformed size" "not a size\|unknown size unit" "${base[@]}" --size 4q
expect_error "fractional bytes" "whole number" "${base[@]}" --size 0.3k
expect_error "malformed chunk list" "empty item" "${base[@]}" --chunks 4k,,8k
expect_error "zero threads" "positive" "${base[@]}" --threads 1,0
expect_error "malformed thread list" "whole number" "${base[@]}" --threads 1,x
expect_error "unknown engine" "unknown engine" "${base[@]}" --engine aio2
expect_error "unknown option" "unknown option" "${base[@]}" --chunk 4k
expect_error "missing value" "needs a value" "${base[@]}" --runtime
expect_error "bad duration" "unknown time unit" "${base[@]}" --runtime 2h
expect_error "missing --file" "needs --file" sweep --out "$OUT"
expect_error "chunk not block-aligned" "not a multiple of" "${base[@]}" --chunks 4k,1000
expect_error "size below chunk" "smaller than the largest chunk" "${base[@]}" --chunks 1m --size 512k
expect_error "directory as file" "not a regular file" "${base[@]/$DATA/$WORK}"
expect_error "missing directory" "does not exist" "${base[@]/$DATA/$WORK/no/such/dir/f.bin}"
expect_error "unusable path (through a file)" "cannot use" "${base[@]/$DATA//etc/hostname/f.bin}"
expect_error "not enough space" "not enough free space" "${base[@]}" --size 900t
expect_error "out is a file" "cannot" "${base[@]/$OUT//etc/hostname/x}"

expect_error "fio huge pages not reserved" "huge pages" "${base[@]}" --size 1g --chunks 1g --threads 1024 --compare-fio --fio-mem shmhuge

# A file system that refuses O_DIRECT (tmpfs): refused before any read.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    SHM=$(mktemp -d /dev/shm/flashbed-test-XXXXXX)
    expect_error "tmpfs refuses direct I/O" "does not support direct I/O" "${base[@]/$DATA/$SHM/f.bin}"
    check "tmpfs: nothing created" test -z "$(ls "$SHM")"
    rm -rf "$SHM"
fi

# Missing tools: a PATH without fio or gnuplot.
EMPTY="$WORK/emptybin"
mkdir -p "$EMPTY"
RUN_ENV="PATH=$EMPTY" expect_error "fio missing" "fio, which is not installed" "${base[@]}" --compare-fio
RUN_ENV="PATH=$EMPTY" expect_error "gnuplot missing" "gnuplot, which is not installed" "${base[@]}" --plot

check "no result folder was created" test ! -e "$OUT"
check "no data file was created" test ! -e "$DATA"
check "no temporary left" test -z "$(find "$WORK" -name '*.tmp.*')"

# Unreadable file (only meaningful when not root: root reads anything).
if [ "$(id -u)" -ne 0 ]; then
    head -c 4194304 /dev/urandom > "$WORK/locked.bin"
    chmod 000 "$WORK/locked.bin"
    expect_error "unreadable file" "not readable" "${base[@]/$DATA/$WORK/locked.bin}"
    chmod 600 "$WORK/locked.bin"
fi
finish
