#!/bin/bash
# The memory of process trees, read from /proc for ./process_memory.ts (Deno reads another
# process's /proc files only with --allow-all, which corral's host never holds).
#
#   /bin/bash process_memory.sh PID...
#
# Prints one line per PID: "PID RSS_KB PSS_KB PROCESSES" for the process and every process below
# it (a process that ends meanwhile is left out), or "PID -" when PID cannot be read. Bash
# builtins only: no fork per process.
export PATH=/usr/bin:/bin

# Adds the Rss and Pss of one process to rss and pss; fails when it cannot be read.
add() {
  local key value rest seen=0
  while read -r key value rest; do
    case $key in
      Rss:) rss=$((rss + value)) seen=$((seen + 1)) ;;
      Pss:) pss=$((pss + value)) seen=$((seen + 1)) ;;
    esac
  done 2>/dev/null <"/proc/$1/smaps_rollup" || return 1
  [ "$seen" = 2 ]
}

for top; do
  case $top in '' | *[!0-9]*) echo "$top -"; continue ;; esac
  rss=0 pss=0 n=0
  queue=("$top")
  declare -A visited=()
  while [ ${#queue[@]} -gt 0 ]; do
    p=${queue[0]}
    queue=("${queue[@]:1}")
    [ -n "${visited[$p]-}" ] && continue
    visited[$p]=1
    if ! add "$p"; then
      [ "$p" = "$top" ] && break
      continue
    fi
    n=$((n + 1))
    for f in /proc/"$p"/task/*/children; do
      kids=()
      read -r -a kids <"$f" 2>/dev/null
      queue+=("${kids[@]}")
    done
  done
  unset visited
  if [ "$n" = 0 ]; then echo "$top -"; else echo "$top $rss $pss $n"; fi
done
