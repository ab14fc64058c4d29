/**
 * The launcher of a sandbox namespace: `/bin/bash ./launch.sh`, which runs
 * on the host first (after the sandbox's first process joined its limits,
 * ./limits.ts) and execs bwrap; its second stage, in the namespaces it makes
 * for write layers and forwarders, is ./launch_stage.sh beside it. Both are
 * run by path ({@link launcherCommand}), never built as a string. It
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
 *    that name is by then) and mounts an overlay there whose upper layer
 *    `LAYER/u` is the sandbox's own (core/layers/), with no redirects, no
 *    metadata-only copies and no index (the upper layer holds whole files
 *    and plain whiteouts, which core/layers/ reads), `volatile` (an upper
 *    layer is never reused after a crash): bwrap binds the overlay (`LAYER/m`) at
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
 * {@link REFUSED_MARK}`expected<TAB>found` on stderr. The pseudo-options and
 * the refusal are spelled out in ./launch.sh as below (./launcher_test.ts
 * checks that they agree, and runs the launcher).
 *
 * @module
 */
import { shellProgram } from "../base/mod.ts";

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
 * The launcher's command: `/bin/bash`, ./launch.sh (its copy written out of
 * a compiled corral, ../base/self_run.ts) and util-linux's `unshare`
 * ({@link unshareBinary}); append `BWRAP ARGS… -- COMMAND…`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { launcherCommand } from "./launcher.ts";
 * const [bash, file, unshare] = launcherCommand();
 * assert.ok(bash === "/bin/bash" && file.endsWith("/launch.sh") && unshare.endsWith("/unshare"));
 * assert.match(Deno.readTextFileSync(file), /exec "\$b" --args "\$fd" -- "\$@"/);
 * ```
 */
export function launcherCommand(): string[] {
  return ["/bin/bash", shellProgram("core/jail/launch.sh"), unshareBinary()];
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
