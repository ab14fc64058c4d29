#!/bin/sh
# The end of a sandbox's limits (./limits.ts): prints "hit=1" when it ever hit its process limit
# (else "hit=0"), then kills every process left in its GROUPs and removes them.
#
#   /bin/sh limits_release.sh GROUP…
#
# Each round kills what is left and removes the groups. A group that still holds a process cannot
# be removed (EBUSY): the rmdir alone says whether anything is left, so a release whose processes
# are gone by then ends in one round, without a sleep (a program).
hit=0
for g in "$@"; do
  if [ -f "$g/pids.events" ]; then
    while read -r k n; do [ "$k" = max ] && [ "${n:-0}" -gt 0 ] && hit=1; done <"$g/pids.events"
  fi
done
echo "hit=$hit"
round=0
while [ $round -lt 100 ]; do
  round=$((round + 1))
  left=0
  for g in "$@"; do
    [ -d "$g" ] || continue
    while read -r p; do kill -9 "$p" 2>/dev/null; done 2>/dev/null <"$g/cgroup.procs"
    rmdir "$g" 2>/dev/null || left=1
  done
  [ "$left" = 0 ] && exit 0
  sleep 0.005
done
