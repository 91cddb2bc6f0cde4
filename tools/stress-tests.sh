#!/usr/bin/env bash
# Runs a build's whole CTest suite while stress-ng keeps every core busy,
# R times, to prove that no test depends on the machine's timing (issue 47:
# tests check behaviour and exact counts; a measured time belongs in a
# benchmark).
#
#   tools/stress-tests.sh [BUILD_DIR [R]] [CTEST OPTIONS...]
#
# BUILD_DIR defaults to build, R to 3. Options after them go to ctest
# (-R REGEX, -E REGEX, -L LABEL, -j N: e.g. `tools/stress-tests.sh build 1
# -R unit_` for a quick look). stress-ng runs `--cpu N` workers, N = nproc,
# for the length of each suite; ctest runs with -j N unless given -j.
# Prints each run's summary line ("100% tests passed, 0 tests failed out
# of M") and the failed tests' names, then one line for all runs. Exit
# status: 0 when every run passed, 1 when any failed, 2 on a usage error
# or without stress-ng.
set -u

usage() {
    sed -n '6,16p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
[ "${1:-}" = -h ] || [ "${1:-}" = --help ] && usage
build=${1:-build}
[ $# -gt 0 ] && shift
rounds=3
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then
    rounds=$1
    shift
fi
[ "$rounds" -ge 1 ] || { echo "stress-tests: R must be at least 1, not $rounds" >&2; exit 2; }
[ -f "$build/CTestTestfile.cmake" ] || {
    echo "stress-tests: $build is not a configured build folder (no CTestTestfile.cmake): cmake -S . -B $build first" >&2
    exit 2
}
command -v ctest >/dev/null || { echo "stress-tests: ctest is not installed (it comes with cmake)" >&2; exit 2; }
command -v stress-ng >/dev/null || {
    echo "stress-tests: stress-ng is not installed: sudo apt-get install stress-ng (Debian, Ubuntu)," \
        "sudo dnf install stress-ng (Fedora), brew install stress-ng (macOS)" >&2
    exit 2
}

cores=$(nproc)
jobs=(-j "$cores")
for a in "$@"; do
    case $a in -j | -j* | --parallel | --parallel=*) jobs=() ;; esac
done
logs=$(mktemp -d)
stress_pid=
stop_stress() {
    if [ -n "$stress_pid" ]; then
        kill "$stress_pid" 2>/dev/null
        wait "$stress_pid" 2>/dev/null
        stress_pid=
    fi
}
trap 'stop_stress; rm -rf "$logs"' EXIT
trap 'exit 130' INT TERM

failed_runs=0
for r in $(seq "$rounds"); do
    stress-ng --cpu "$cores" --timeout 0 --quiet &
    stress_pid=$!
    sleep 1 # the workers running before the first test starts
    log="$logs/run-$r.log"
    (cd "$build" && ctest "${jobs[@]}" --output-on-failure "$@") >"$log" 2>&1
    rc=$?
    stop_stress
    summary=$(grep -E 'tests passed|No tests were found' "$log" | tail -1)
    [ -n "$summary" ] || summary="no summary (ctest exit $rc; its last line: $(tail -1 "$log"))"
    if [ $rc -eq 0 ]; then
        echo "run $r of $rounds under stress-ng --cpu $cores: passed: $summary"
    else
        failed_runs=$((failed_runs + 1))
        echo "run $r of $rounds under stress-ng --cpu $cores: FAILED: $summary"
        sed -n '/The following tests FAILED/,/Errors while running/p' "$log" | grep -v 'Errors while running'
        kept="$build/stress-run-$r.log"
        cp "$log" "$kept" && echo "  its whole output: $kept"
    fi
done
if [ $failed_runs -eq 0 ]; then
    echo "stress-tests: all $rounds runs passed under load"
    exit 0
fi
echo "stress-tests: $failed_runs of $rounds runs failed under load"
exit 1
