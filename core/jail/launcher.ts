/**
 * The launcher of a sandbox namespace: a `/bin/bash` that runs first (after
 * it joined the sandbox's limits, ./limits.ts) and execs bwrap. It
 *
 * 1. closes every descriptor but stdin, stdout and stderr, so that none the
 *    host inherited reaches a namespace;
 * 2. opens every path bwrap binds from the grant (`--bind-fd PATH DEST`,
 *    `--ro-bind-fd PATH DEST`), checks with one `readlink` of
 *    `/proc/self/fd` that each open is exactly PATH (no symlink in any
 *    component, nothing renamed), and hands bwrap the open descriptor;
 *    {@link VERIFY_ARG} checks a path without binding it;
 * 3. for each write root given as {@link OVERLAY_ARG}` ROOT LAYER`, opens
 *    and checks ROOT the same way, then, in a mount namespace of its own
 *    (and a user namespace when not root), opens ROOT again (a bind's
 *    source must belong to that namespace), checks that it is exactly the
 *    path and the very folder opened first (device and inode), binds that
 *    descriptor at `LAYER/l` (`mount --no-canonicalize`: mount(8) would
 *    otherwise turn `/proc/self/fd/N` back into a name and follow whatever
 *    that name is by then) and mounts an overlay there whose upper layer `LAYER/u` is the
 *    sandbox's own (core/layers/): bwrap binds the overlay (`LAYER/m`) at
 *    ROOT, so every write lands in the upper layer and nothing the sandbox
 *    makes, mount points included, appears on the host;
 * 4. for {@link NETNS_ARG}` ADDRESSES` (a sandbox with forwarders,
 *    ../egress/egress_forward.ts), makes the network namespace itself, before bwrap
 *    (which then keeps it, `--share-net`): checks that it is a new one,
 *    brings its loopback up with ADDRESSES on it, and lets every port be
 *    listened on there (`ip_unprivileged_port_start` 0, in that namespace
 *    only), so the forwarders listen on a granted address and port, 443 or
 *    5432 alike, while the sandbox holds no capability at all;
 * 5. opens each compiled syscall filter given as {@link SECCOMP_ARG}` PATH`
 *    (core/seccomp/), checked like a bound path, and hands it to bwrap as
 *    `--add-seccomp-fd`: bwrap loads it as the last step before the
 *    namespace's first program, which every process there inherits;
 * 6. passes bwrap its arguments on a pipe (`--args`): no host path in its
 *    argv, which the namespace's `/proc/1/cmdline` would show.
 *
 * A path that is no longer exactly itself, or a layer that cannot be
 * mounted, stops the start: exit {@link REFUSED_EXIT}, with
 * {@link REFUSED_MARK}`expected<TAB>found` on stderr.
 *
 * @module
 */

/**
 * A pseudo-option of the bwrap arguments: `--corral-verify PATH` opens PATH
 * and checks it like a bound source, then closes it (a path that is masked,
 * or the working directory); it never reaches bwrap.
 */
export const VERIFY_ARG = "--corral-verify";

/**
 * A pseudo-option of the bwrap arguments: `--corral-overlay ROOT LAYER`
 * binds the folder ROOT writable through an overlay whose upper layer is
 * `LAYER/u` (work folder `LAYER/w`, mount points `LAYER/l` and `LAYER/m`).
 */
export const OVERLAY_ARG = "--corral-overlay";

/**
 * A pseudo-option of the bwrap arguments: `--corral-netns ADDRESSES` (comma
 * separated, `-` for none) has the launcher make the network namespace, as
 * above; bwrap gets `--share-net` in its place. Never without
 * `--unshare-all` before it.
 */
export const NETNS_ARG = "--corral-netns";

/**
 * A pseudo-option of the bwrap arguments: `--corral-seccomp PATH` opens the
 * compiled filter PATH (checked like a bound path) and passes its
 * descriptor as `--add-seccomp-fd`; given again, the programs load in order.
 */
export const SECCOMP_ARG = "--corral-seccomp";

/** Exit code of a launcher that refused a path that changed, or a layer. */
export const REFUSED_EXIT = 96;

/** What a launcher that refused writes on stderr, before `expected<TAB>found`. */
export const REFUSED_MARK = "corral-refused ";

/**
 * The overlay options: no redirects, no metadata-only copies, no index (the
 * upper layer holds whole files and plain whiteouts, which core/layers/
 * reads); `volatile`: the upper layer is never reused after a crash.
 */
const _OVERLAY_ROOT = "redirect_dir=off,metacopy=off,index=off,xino=off,volatile";
/** The same in a user namespace (as another user than root): its xattrs in `user.`. */
const _OVERLAY_USER = "userxattr,metacopy=off,index=off,xino=off,volatile";

// (No redirection around the loop: bash would park stderr on a descriptor it closes.)
const _CLOSE_INHERITED =
  'for f in /proc/self/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done; ';

const _REFUSE =
  `refuse() { printf '${REFUSED_MARK}%s\\t%s\\n' "$1" "$2" >&2; exit ${REFUSED_EXIT}; }`;

// Runs in the new namespaces: the network's set up (when asked), then each layer's lower is the
// folder the launcher opened.
const _STAGE = `${_REFUSE}
b=$1; afd=$2; o=$3; hostns=$4; addrs=$5; shift 5
if [ "$hostns" != - ]; then
  [ "$(readlink /proc/self/ns/net)" != "$hostns" ] || refuse network "(no network namespace of its own)"
  ip() { PATH=/usr/sbin:/sbin:/usr/bin:/bin command ip "$@" 2>/dev/null; }
  ip link set lo up || refuse network "(its loopback cannot be brought up: iproute2's ip is needed)"
  for x in \${addrs//,/ }; do
    [ "$x" = - ] && continue
    case $x in *:*) ip -6 addr add "$x" dev lo nodad ;; *) ip addr add "$x" dev lo ;; esac ||
      refuse "$x" "(cannot be put on the namespace's loopback)"
  done
  echo 0 2>/dev/null >/proc/sys/net/ipv4/ip_unprivileged_port_start ||
    refuse network "(ports below 1024 cannot be opened to its forwarders)"
fi
while [ "$1" != -- ]; do
  fd=$1; l=$2; p=$3; shift 3
  # A bind's source must be in this mount namespace: opened again here, it must be exactly the
  # path and the very folder the launcher opened; then bound by that descriptor, never by name.
  { exec {nfd}<"$p"; } 2>/dev/null || refuse "$p" "(cannot be opened)"
  [ "$(PATH=/usr/bin:/bin readlink "/proc/self/fd/$nfd")" = "$p" ] &&
    [ "$(PATH=/usr/bin:/bin stat -L -c %d:%i "/proc/self/fd/$nfd")" = "$(PATH=/usr/bin:/bin stat -L -c %d:%i "/proc/self/fd/$fd")" ] ||
    refuse "$p" "(changed while its layer was made)"
  PATH=/usr/bin:/bin mount --no-canonicalize --bind "/proc/self/fd/$nfd" "$l/l" 2>/dev/null &&
    PATH=/usr/bin:/bin mount --no-canonicalize -t overlay overlay -o "lowerdir=$l/l,upperdir=$l/u,workdir=$l/w,$o" "$l/m" 2>/dev/null ||
    refuse "$p" "(not writable through a layer: overlayfs in a user and mount namespace is needed)"
  exec {fd}<&- {nfd}<&-
done
shift
exec "$b" --args "$afd" -- "$@"`;

const _LAUNCH = `${_REFUSE}
launch() {
  local b=$1 x p l fd i; shift
  local -a a=() fds=() want=() shut=() links=() procs=() ovl=() ns=()
  local addrs=- hostns=-
  while [ $# -gt 0 ]; do
    x=$1; shift
    case $x in
      --) break ;;
      ${NETNS_ARG})
        addrs=$1; shift
        hostns=$(readlink /proc/self/ns/net) || refuse network "(its namespace cannot be read)"
        a+=(--share-net) ;;
      --bind-fd|--ro-bind-fd|${VERIFY_ARG}|${OVERLAY_ARG}|${SECCOMP_ARG})
        p=$1; shift
        if [ "$x" = ${OVERLAY_ARG} ]; then
          l=$1; shift
          [ -d "$p" ] || refuse "$p" "(not a folder)"
        fi
        [ -d "$p" ] || [ -f "$p" ] || refuse "$p" "(not a file or folder: a FIFO, a device or nothing)"
        { exec {fd}<"$p"; } 2>/dev/null || refuse "$p" "(cannot be opened)"
        fds+=("$fd"); want+=("$p"); procs+=("/proc/self/fd/$fd")
        case $x in
          ${VERIFY_ARG}) shut+=("$fd") ;;
          ${OVERLAY_ARG}) ovl+=("$fd" "$l" "$p"); a+=(--bind "$l/m" "$p") ;;
          ${SECCOMP_ARG}) a+=(--add-seccomp-fd "$fd") ;;
          *) a+=("$x" "$fd") ;;
        esac ;;
      *) a+=("$x") ;;
    esac
  done
  if [ \${#fds[@]} -gt 0 ]; then
    mapfile -d '' links < <(PATH=/usr/bin:/bin readlink -z -- "\${procs[@]}")
    for i in "\${!fds[@]}"; do
      [ "\${links[i]-}" = "\${want[i]}" ] || refuse "\${want[i]}" "\${links[i]-(unknown)}"
    done
    for fd in "\${shut[@]}"; do exec {fd}<&-; done
  fi
  exec {fd}< <(printf '%s\\0' "\${a[@]}")
  [ \${#ovl[@]} -gt 0 ] && ns+=(-m --propagation private)
  [ "$hostns" != - ] && ns+=(-n)
  if [ \${#ns[@]} -gt 0 ]; then
    if [ "$EUID" = 0 ]; then
      exec "$UNSHARE" "\${ns[@]}" -- /bin/bash -c "$STAGE" corral-stage "$b" "$fd" ${_OVERLAY_ROOT} "$hostns" "$addrs" "\${ovl[@]}" -- "$@"
    fi
    exec "$UNSHARE" -U --map-root-user "\${ns[@]}" -- /bin/bash -c "$STAGE" corral-stage "$b" "$fd" ${_OVERLAY_USER} "$hostns" "$addrs" "\${ovl[@]}" -- "$@"
  fi
  exec "$b" --args "$fd" -- "$@"
}
`;

/**
 * The launcher's bash script: defines `launch BWRAP ARGS… -- COMMAND…`
 * after closing every inherited descriptor; the caller's script ends by
 * calling it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { launcherScript, OVERLAY_ARG } from "./launcher.ts";
 * const s = launcherScript();
 * assert.ok(s.includes("launch()") && s.includes(OVERLAY_ARG) && s.includes("--args"));
 * ```
 */
export function launcherScript(): string {
  return _CLOSE_INHERITED + `STAGE=${_quote(_STAGE)}\n` +
    `UNSHARE=${_quote(unshareBinary())}\n` + _LAUNCH;
}

let _unshare: string | undefined;

/**
 * util-linux's `unshare`, which makes the write layers' mount namespace
 * (`/usr/bin/unshare` where it is not found elsewhere; a missing one
 * refuses the start of a sandbox with a write layer, naming it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { unshareBinary } from "./launcher.ts";
 * assert.ok(unshareBinary().endsWith("/unshare"));
 * ```
 */
export function unshareBinary(): string {
  if (_unshare) return _unshare;
  for (const p of ["/usr/bin/unshare", "/bin/unshare", "/usr/sbin/unshare"]) {
    try {
      if (Deno.statSync(p).isFile) return _unshare = p;
    } catch { /* not there */ }
  }
  return _unshare = "/usr/bin/unshare";
}

function _quote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}
