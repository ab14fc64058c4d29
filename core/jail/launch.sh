#!/bin/bash
# The launcher of a sandbox namespace: it runs on the host, after the sandbox's first process
# joined its limits (./limits_join.sh), and execs bwrap. ./launcher.ts says what each step is for.
#
#   /bin/bash launch.sh UNSHARE BWRAP ARGS… -- COMMAND…
#
# UNSHARE is util-linux's unshare. ARGS are bwrap's, but --bind-fd and --ro-bind-fd take a PATH
# where bwrap takes a descriptor, and four pseudo-options never reach bwrap:
#   --corral-verify PATH          open PATH and check it like a bound path, then close it
#   --corral-overlay ROOT LAYER   bind ROOT writable through an overlay whose upper layer is LAYER/u
#   --corral-netns ADDRESSES      make the network namespace here (bwrap gets --share-net)
#   --corral-seccomp PATH         hand bwrap the compiled filter PATH as --add-seccomp-fd
# A path that is no longer exactly itself, or a layer that cannot be mounted, stops the start:
# exit 96, with "corral-refused expected<TAB>found" on stderr.

# 1. Every descriptor but stdin, stdout and stderr is closed, so that none the host inherited
# reaches a namespace. (No redirection around the loop: bash would park stderr on a descriptor it
# closes. bash reads this file on a descriptor of its own, which it keeps and closes on exec.)
for f in /proc/self/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done

refuse() { printf 'corral-refused %s\t%s\n' "$1" "$2" >&2; exit 96; }

unshare=$1 b=$2
shift 2
a=() fds=() want=() shut=() links=() procs=() ovl=() ns=()
addrs=- hostns=-
# 2. and 5. Every path bwrap binds, and every syscall filter, is opened here and handed to bwrap
# as the open descriptor.
while [ $# -gt 0 ]; do
  x=$1
  shift
  case $x in
    --) break ;;
    --corral-netns)
      addrs=$1
      shift
      hostns=$(readlink /proc/self/ns/net) || refuse network "(its namespace cannot be read)"
      a+=(--share-net) ;;
    --bind-fd | --ro-bind-fd | --corral-verify | --corral-overlay | --corral-seccomp)
      p=$1
      shift
      if [ "$x" = --corral-overlay ]; then
        l=$1
        shift
        [ -d "$p" ] || refuse "$p" "(not a folder)"
      fi
      [ -d "$p" ] || [ -f "$p" ] || refuse "$p" "(not a file or folder: a FIFO, a device or nothing)"
      { exec {fd}<"$p"; } 2>/dev/null || refuse "$p" "(cannot be opened)"
      fds+=("$fd") want+=("$p") procs+=("/proc/self/fd/$fd")
      case $x in
        --corral-verify) shut+=("$fd") ;;
        --corral-overlay) ovl+=("$fd" "$l" "$p") a+=(--bind "$l/m" "$p") ;;
        --corral-seccomp) a+=(--add-seccomp-fd "$fd") ;;
        *) a+=("$x" "$fd") ;;
      esac ;;
    *) a+=("$x") ;;
  esac
done
# One readlink of /proc/self/fd for all of them: each open must be exactly its path (no symlink in
# any component, nothing renamed).
if [ ${#fds[@]} -gt 0 ]; then
  mapfile -d '' links < <(PATH=/usr/bin:/bin readlink -z -- "${procs[@]}")
  for i in "${!fds[@]}"; do
    [ "${links[i]-}" = "${want[i]}" ] || refuse "${want[i]}" "${links[i]-(unknown)}"
  done
  for fd in "${shut[@]}"; do exec {fd}<&-; done
fi
# 6. bwrap's arguments on a pipe (--args): no host path in its argv, which the namespace's
# /proc/1/cmdline would show.
exec {fd}< <(printf '%s\0' "${a[@]}")
# 3. and 4. The write layers and the network namespace are made in namespaces of the launcher's
# own (a user namespace too when not root), by ./launch_stage.sh, beside this file. The overlay
# options: no redirects, no metadata-only copies, no index (the upper layer holds whole files and
# plain whiteouts, which core/layers/ reads); volatile: an upper layer is never reused after a
# crash. As another user than root, its extended attributes are in user.
[ ${#ovl[@]} -gt 0 ] && ns+=(-m --propagation private)
[ "$hostns" != - ] && ns+=(-n)
if [ ${#ns[@]} -gt 0 ]; then
  stage=${BASH_SOURCE[0]%/*}/launch_stage.sh
  if [ "$EUID" = 0 ]; then
    exec "$unshare" "${ns[@]}" -- /bin/bash "$stage" "$b" "$fd" \
      redirect_dir=off,metacopy=off,index=off,xino=off,volatile "$hostns" "$addrs" "${ovl[@]}" -- "$@"
  fi
  exec "$unshare" -U --map-root-user "${ns[@]}" -- /bin/bash "$stage" "$b" "$fd" \
    userxattr,metacopy=off,index=off,xino=off,volatile "$hostns" "$addrs" "${ovl[@]}" -- "$@"
fi
exec "$b" --args "$fd" -- "$@"
