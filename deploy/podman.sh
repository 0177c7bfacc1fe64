# shellcheck shell=bash
# Sourced by deploy/build-image.sh and deploy/run-image.sh (bash): how podman has to be called on this machine.
#
#   . deploy/podman.sh; podman_probe IMAGE     # an image with `true` in it
#   "${PODMAN[@]}" build "${LIMITS[@]}" ...     "${PODMAN[@]}" run "${LIMITS[@]}" ...
#
# On an ordinary machine both stay plain (PODMAN=(podman), LIMITS=()). Two things seen on the VMs these scripts
# were written on, each tried only when a plain `podman run IMAGE true` fails:
# - cgroups v1 with a cgroup2 hierarchy beside it ("hybrid"): crun, Debian's default runtime, refuses it
#   ("cgroups in hybrid mode not supported"); runc runs it: PODMAN=(podman --runtime runc).
# - no CAP_SYS_RESOURCE: podman asks the runtime to raise RLIMIT_NOFILE and RLIMIT_NPROC above the hard limits
#   it has ("setrlimit ... Operation not permitted"); ask for the limits podman itself runs under instead (its
#   open files: this shell's hard limit; its processes: podman lowers its own hard limit to 32768).

PODMAN=(podman)
LIMITS=()

_podman_tries() {
    "${PODMAN[@]}" run --rm --network=none "${LIMITS[@]}" --entrypoint true "$1" >/dev/null 2>"${2:-/dev/null}"
}

podman_probe() {  # IMAGE: any image with `true`; it is run with --entrypoint true
    local image=$1 err
    err=$(mktemp)
    if _podman_tries "$image" "$err"; then rm -f "$err"; return 0; fi
    local nofile nproc
    nofile=$(ulimit -Hn)
    nproc=$(ulimit -Hu)
    [ "$nofile" = unlimited ] && nofile=1048576
    if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
    local runtimes=("") limits
    command -v runc >/dev/null 2>&1 && runtimes+=(runc)
    for runtime in "${runtimes[@]}"; do
        for limits in "" "--ulimit nofile=$nofile:$nofile --ulimit nproc=$nproc:$nproc"; do
            PODMAN=(podman ${runtime:+--runtime "$runtime"})
            read -r -a LIMITS <<<"$limits"
            if _podman_tries "$image" "$err"; then
                echo "podman runs containers here as: ${PODMAN[*]} run ${LIMITS[*]}" >&2
                rm -f "$err"
                return 0
            fi
        done
    done
    echo "podman cannot run a container here; the last error:" >&2
    cat "$err" >&2
    rm -f "$err"
    PODMAN=(podman)
    LIMITS=()
    return 1
}
