#!/bin/sh
# The test suite under qemu-user, once per CPU model (make test-arm64, make test-arm64-ci). Each
# model gets two wrapper scripts, so the tests that run the CLI (PF_CLI) or examples/chat
# (PF_EXAMPLE_CHAT) reach the ARM binaries under the same model; PF_EXPECT_LEVEL makes
# kernels_cpu_levels check the level each model gets. With -p the models run at once, one process
# each (the suite is mostly one thread, and the machines have two cores or more); each model's
# output goes to a file that is printed, in order, once all have ended.
# Usage: tests/arm64_suite.sh [-p] QEMU SYSROOT BUILD SHARED "CPU:LEVEL ..." [FILTER...]
set -u
par=0
if [ "$1" = -p ]; then par=1; shift; fi
qemu=$1 root=$2 build=$3 shared=$4 cpus=$5
shift 5
case $build in /*) ;; *) build=$(pwd)/$build ;; esac

wrap() { # CPU BINARY SCRIPT
    printf '#!/bin/sh\nexec %s -L %s -cpu %s %s "$@"\n' "$qemu" "$root" "$1" "$2" > "$3.tmp" &&
        chmod +x "$3.tmp" && mv "$3.tmp" "$3"
}

run_model() { # CPU LEVEL FILTER...
    cpu=$1 level=$2
    shift 2
    wrap "$cpu" "$build/pocketflash" "$build/qemu-$cpu.sh"
    wrap "$cpu" "$build/examples/chat" "$build/qemu-$cpu-chat.sh"
    echo "== qemu-aarch64 -cpu $cpu (expect $level)"
    start=$(date +%s)
    PF_EXPECT_LEVEL=$level PF_SHARED=$shared PF_CLI=$build/qemu-$cpu.sh PF_EXAMPLE_CHAT=$build/qemu-$cpu-chat.sh \
        "$qemu" -L "$root" -cpu "$cpu" "$build/tests/run_tests" "$@"
    rc=$?
    echo "== qemu-aarch64 -cpu $cpu: $(($(date +%s) - start)) s"
    return $rc
}

if [ $par = 0 ]; then
    for cl in $cpus; do run_model "${cl%%:*}" "${cl#*:}" "$@" || exit 1; done
    exit 0
fi
for cl in $cpus; do
    cpu=${cl%%:*}
    (run_model "$cpu" "${cl#*:}" "$@" > "$build/suite-$cpu.log" 2>&1; echo $? > "$build/suite-$cpu.rc") &
done
wait
fail=0
for cl in $cpus; do
    cpu=${cl%%:*}
    cat "$build/suite-$cpu.log"
    [ "$(cat "$build/suite-$cpu.rc" 2>/dev/null)" = 0 ] || { echo "FAIL the suite under qemu-aarch64 -cpu $cpu"; fail=1; }
done
exit $fail
