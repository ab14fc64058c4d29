#!/bin/bash
# The launcher's second stage (./launch.sh): it runs in the new namespaces util-linux's unshare made
# (mount, network, and user when not root), still on the host's files, and execs bwrap.
#
#   /bin/bash launch_stage.sh BWRAP ARGS_FD OVERLAY_OPTIONS HOST_NETNS ADDRESSES [FD LAYER ROOT]… -- COMMAND…
#
# With HOST_NETNS (not -): checks that the network namespace is a new one, brings its loopback up
# with ADDRESSES (comma separated, - for none) on it, and lets every port be listened on there.
# Then, for each FD LAYER ROOT (a write root opened by ./launch.sh), mounts an overlay whose lower
# layer is the folder opened, at LAYER/m. Refusals as ./launch.sh's: exit 96.

refuse() { printf 'corral-refused %s\t%s\n' "$1" "$2" >&2; exit 96; }

b=$1 afd=$2 o=$3 hostns=$4 addrs=$5
shift 5
if [ "$hostns" != - ]; then
  [ "$(readlink /proc/self/ns/net)" != "$hostns" ] || refuse network "(no network namespace of its own)"
  ip() { PATH=/usr/sbin:/sbin:/usr/bin:/bin command ip "$@" 2>/dev/null; }
  ip link set lo up || refuse network "(its loopback cannot be brought up: iproute2's ip is needed)"
  IFS=, read -r -a list <<<"$addrs"
  for x in "${list[@]}"; do
    [ "$x" = - ] && continue
    case $x in
      *:*) ip -6 addr add "$x" dev lo nodad ;;
      *) ip addr add "$x" dev lo ;;
    esac || refuse "$x" "(cannot be put on the namespace's loopback)"
  done
  echo 0 2>/dev/null >/proc/sys/net/ipv4/ip_unprivileged_port_start ||
    refuse network "(ports below 1024 cannot be opened to its forwarders)"
fi
while [ "$1" != -- ]; do
  fd=$1 l=$2 p=$3
  shift 3
  # A bind's source must be in this mount namespace: opened again here, it must be exactly the
  # path and the very folder the launcher opened; then bound by that descriptor, never by name
  # (mount --no-canonicalize: mount(8) would otherwise turn /proc/self/fd/N back into a name and
  # follow whatever that name is by then).
  { exec {nfd}<"$p"; } 2>/dev/null || refuse "$p" "(cannot be opened)"
  if [ "$(PATH=/usr/bin:/bin readlink "/proc/self/fd/$nfd")" != "$p" ] ||
    [ "$(PATH=/usr/bin:/bin stat -L -c %d:%i "/proc/self/fd/$nfd")" != "$(PATH=/usr/bin:/bin stat -L -c %d:%i "/proc/self/fd/$fd")" ]; then
    refuse "$p" "(changed while its layer was made)"
  fi
  if ! PATH=/usr/bin:/bin mount --no-canonicalize --bind "/proc/self/fd/$nfd" "$l/l" 2>/dev/null ||
    ! PATH=/usr/bin:/bin mount --no-canonicalize -t overlay overlay -o "lowerdir=$l/l,upperdir=$l/u,workdir=$l/w,$o" "$l/m" 2>/dev/null; then
    refuse "$p" "(not writable through a layer: overlayfs in a user and mount namespace is needed)"
  fi
  exec {fd}<&- {nfd}<&-
done
shift
exec "$b" --args "$afd" -- "$@"
