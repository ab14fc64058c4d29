#!/bin/bash
# A running sandbox seen from the host (./view_procs.ts): what its processes hold in the tree,
# and in mode "pause" the pause that keeps them from writing while corral clears its upper layer.
#
#   /bin/bash view_procs.sh LAUNCHER_PID look|pause PAUSE_SECONDS
#
# Prints NUL-separated records: "l PROC TARGET" (a link in /proc), "i PROC INODE", "m INODE" (a
# mapped file), "t MOUNTPOINT". In mode pause it first stops every process of the sandbox (those
# forked meanwhile too) and prints "p" once all are stopped (exit 3, none left stopped, when they
# cannot all be); after its report it closes its output and keeps them stopped until a line on
# its input, the end of its input, or PAUSE_SECONDS (then exit 4), and lets them go on.
root=$1 mode=$2 seconds=$3
export PATH=/usr/bin:/bin

# The sandbox's processes: the launcher's descendants, level by level (bash builtins only: a
# pause must not wait on a fork per process).
kids() {
  local p f k
  for p in "$@"; do
    for f in /proc/"$p"/task/*/children; do
      k=()
      read -r -a k <"$f" 2>/dev/null
      echo "${k[@]}"
    done
  done
}
all() {
  local q out=
  q=$(kids "$1")
  while [ -n "$q" ]; do
    out="$out $q"
    # shellcheck disable=SC2086 # a list of process ids, split on purpose
    q=$(kids $q)
  done
  # shellcheck disable=SC2086 # split on purpose: the ids on one line
  echo $out
}

# Stop every process (those forked meanwhile too) until all are stopped; exit 3 if that fails.
stopped=" "
resume() {
  # shellcheck disable=SC2086 # a list of process ids, split on purpose
  [ "$stopped" = " " ] || kill -CONT $stopped 2>/dev/null
}
if [ "$mode" = pause ]; then
  ok=
  for ((i = 0; i < 400; i++)); do
    new=
    for p in $(all "$root"); do case $stopped in *" $p "*) ;; *) new="$new $p" ;; esac done
    if [ -n "$new" ]; then
      # shellcheck disable=SC2086 # a list of process ids, split on purpose
      kill -STOP $new 2>/dev/null
      for p in $new; do stopped="$stopped$p "; done
    fi
    still=
    for p in $stopped; do
      for t in /proc/"$p"/task/*/stat; do
        l=
        read -r l <"$t" 2>/dev/null
        [ -n "$l" ] || continue
        l=${l##*) }
        case ${l%% *} in T | t | Z | X) ;; *) still=1 ;; esac
      done
    done
    [ -z "$new" ] && [ -z "$still" ] && {
      ok=1
      break
    }
    sleep 0.005
  done
  [ -n "$ok" ] || {
    resume
    exit 3
  }
  printf 'p\0'
fi

# What they hold.
pids=$(all "$root")
ps=() maps=()
for p in $pids; do ps+=("/proc/$p/fd" "/proc/$p/cwd") maps+=("/proc/$p/maps"); done
if [ -n "$pids" ]; then
  find "${ps[@]}" -maxdepth 1 \( -name cwd -o -path '*/fd/*' \) -printf 'l\0%p\0%l\0' 2>/dev/null
  find -L "${ps[@]}" -maxdepth 1 \( -name cwd -prune -printf 'i\0%p\0%i\0' \) -o \
    \( -path '*/fd/*' -printf 'i\0%p\0%i\0' \) 2>/dev/null
  # shellcheck disable=SC2086 # a list of process ids, split on purpose
  set -- $pids
  awk 'FILENAME ~ /mountinfo$/ { printf "t%c%s%c", 0, $5, 0; next }
    $5 != 0 && !seen[$5]++ { printf "m%c%s%c", 0, $5, 0 }' "${maps[@]}" "/proc/$1/mountinfo" 2>/dev/null
fi
[ "$mode" = pause ] || exit 0
exec 1>&-
read -r -t "$seconds" _ && {
  resume
  exit 0
}
resume
exit 4
