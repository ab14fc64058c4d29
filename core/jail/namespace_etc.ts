/**
 * The files of `/etc` a namespace gets from corral instead of the host's:
 * `passwd` and `group` with only root, the user corral runs as and nobody
 * (no account of the host's), `hosts` with `localhost` and the names the
 * sandbox may reach through its forwarders (../egress/egress_forward.ts), and
 * `resolv.conf` naming the namespace's own loopback (no DNS server of the
 * host's is reachable there; a name outside `hosts` fails at once). They
 * are written by the host into a folder of corral's own, never the
 * workspace, and bound read-only (./namespace_runtime.ts).
 *
 * @module
 */
import { join } from "node:path";
import { NAMESPACE_HOME } from "./own_mounts.ts";
import { sha256Hex } from "../base/mod.ts";

/** The files {@link etcFiles} makes, each bound at `/etc/<name>`. */
export const OWN_ETC: readonly string[] = ["passwd", "group", "hosts", "resolv.conf"];

/** A name of `/etc/hosts` and the address it stands for inside. */
export interface HostsEntry {
  name: string;
  address: string;
}

/**
 * The text of each of {@link OWN_ETC} for a sandbox run by `uid`/`gid`,
 * whose `hosts` also holds `names`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { etcText } from "./namespace_etc.ts";
 * const t = etcText(1000, 1000, [{ name: "db.internal", address: "127.0.0.2" }]);
 * assert.match(t.passwd, /^corral:x:1000:1000:/m);
 * assert.doesNotMatch(t.passwd, /daemon|www-data/);
 * assert.match(t.hosts, /^127\.0\.0\.2\tdb\.internal$/m);
 * ```
 */
export function etcText(
  uid: number,
  gid: number,
  names: readonly HostsEntry[] = [],
): Record<string, string> {
  const users = [`root:x:0:0:root:${NAMESPACE_HOME}:/bin/sh`];
  const groups = ["root:x:0:"];
  if (uid !== 0 && uid !== 65534) {
    users.push(`corral:x:${uid}:${gid}:corral:${NAMESPACE_HOME}:/bin/sh`);
  }
  if (gid !== 0 && gid !== 65534) groups.push(`corral:x:${gid}:`);
  users.push("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin");
  groups.push("nogroup:x:65534:");
  // localhost is 127.0.0.1 alone: where a forwarder of `localhost:PORT` listens.
  const hosts = ["127.0.0.1\tlocalhost", "::1\tip6-localhost ip6-loopback"];
  for (const n of names) hosts.push(`${n.address}\t${n.name}`);
  return {
    passwd: users.join("\n") + "\n",
    group: groups.join("\n") + "\n",
    hosts: hosts.join("\n") + "\n",
    "resolv.conf": "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
  };
}

/**
 * A folder under `base` holding {@link OWN_ETC} with `names` in `hosts`:
 * named after its content, written once (to a temporary folder, then
 * renamed), so that corral processes sharing `base` never see a half-written
 * file. Returns the folder.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { etcFiles } from "./namespace_etc.ts";
 * const dir = etcFiles(Deno.makeTempDirSync(), []);
 * assert.match(Deno.readTextFileSync(`${dir}/hosts`), /localhost/);
 * assert.equal(etcFiles(dir + "/..", []), dir);
 * ```
 */
export function etcFiles(base: string, names: readonly HostsEntry[]): string {
  const text = etcText(_id("uid"), _id("gid"), names);
  const digest = sha256Hex(JSON.stringify(text)).slice(0, 16);
  const dir = join(base, `etc-${digest}`);
  // Looked at every time (one stat): a folder removed meanwhile is made again.
  try {
    Deno.statSync(join(dir, OWN_ETC.at(-1)!));
  } catch {
    Deno.mkdirSync(base, { recursive: true, mode: 0o700 });
    const tmp = Deno.makeTempDirSync({ dir: base, prefix: ".etc-" });
    for (const [name, t] of Object.entries(text)) {
      Deno.writeTextFileSync(join(tmp, name), t, { mode: 0o644 });
    }
    Deno.chmodSync(tmp, 0o755);
    try {
      Deno.renameSync(tmp, dir);
    } catch {
      // Another process made it first: the same content.
      Deno.removeSync(tmp, { recursive: true });
    }
  }
  return dir;
}

function _id(which: "uid" | "gid"): number {
  try {
    return (which === "uid" ? Deno.uid() : Deno.gid()) ?? 0;
  } catch {
    return 0;
  }
}
