#!/bin/sh
# Which mechanism limits a sandbox here (./limits.ts), printed as "UID" then one line:
# "cgroup2 PARENT", "cgroup1 PIDS_PARENT MEMORY_PARENT" or "rlimit". It also removes the empty
# groups left by corral hosts that are gone (a host may exit before its last group is reaped).
# Files are read by the shell's own read: each other program is a process more at every start.
#
#   /bin/sh limits_probe.sh
id -u
sweep() {
  for sd in "$1"/corral-*; do
    [ -d "$sd" ] || continue
    sp=${sd##*/corral-}
    sp=${sp%%-*}
    case "$sp" in *[!0-9]* | "") continue ;; esac
    [ -d "/proc/$sp" ] || rmdir "$sd" 2>/dev/null
  done
}
try() { mkdir "$1/corral-probe-$$" 2>/dev/null && rmdir "$1/corral-probe-$$"; }
r=/sys/fs/cgroup
if [ -f $r/cgroup.controllers ] && grep -qw pids $r/cgroup.controllers &&
  grep -qw memory $r/cgroup.controllers && try $r &&
  echo "+pids +memory" >$r/cgroup.subtree_control 2>/dev/null; then
  sweep $r
  echo "cgroup2 $r"
  exit 0
fi
own() {
  while IFS=: read -r _n c path; do
    case ",$c," in *",$1,"*)
      echo "$path"
      return
      ;;
    esac
  done </proc/self/cgroup
}
p=$r/pids$(own pids)
m=$r/memory$(own memory)
if try "$p" && try "$m"; then
  sweep "$p"
  sweep "$m"
  echo "cgroup1 $p $m"
  exit 0
fi
echo rlimit
