#!/bin/sh
# A sandbox's first process: it makes the sandbox's limit groups with their limits, moves itself
# into them, then execs the sandbox (bwrap, or ./launch.sh that execs bwrap), so that every
# process of the sandbox is counted from the start. ./limits.ts says which mechanism and why.
#
#   /bin/sh limits_join.sh KIND PIDS BYTES [GROUP…] -- COMMAND…
#
# KIND cgroup2: one GROUP (pids.max, memory.max); cgroup1: the pids GROUP, then the memory GROUP
# (memory.limit_in_bytes, with swap where the kernel counts it); rlimit: no GROUP, only the
# processes per user (not enforced for root). Exit 97 when a group cannot be made or joined.
kind=$1 pids=$2 bytes=$3
shift 3
case $kind in
  cgroup2)
    PATH=/usr/bin:/bin mkdir "$1" && echo "$pids" >"$1/pids.max" &&
      echo "$bytes" >"$1/memory.max" || exit 97
    echo 0 >"$1/memory.swap.max" 2>/dev/null
    ;;
  cgroup1)
    PATH=/usr/bin:/bin mkdir "$1" && echo "$pids" >"$1/pids.max" &&
      PATH=/usr/bin:/bin mkdir "$2" && echo "$bytes" >"$2/memory.limit_in_bytes" || exit 97
    echo "$bytes" >"$2/memory.memsw.limit_in_bytes" 2>/dev/null
    ;;
  rlimit)
    # bash's ulimit names it -u, dash's -p.
    # shellcheck disable=SC3045
    ulimit -u "$pids" 2>/dev/null || ulimit -p "$pids" 2>/dev/null
    ;;
  *) exit 97 ;;
esac
for g in "$@"; do
  [ "$g" = -- ] && break
  echo $$ >"$g/cgroup.procs" || exit 97
done
while [ "$1" != -- ]; do shift; done
shift
exec "$@"
