/**
 * Real services the tests and the bench start themselves (never a system
 * service): Debian's PostgreSQL on a free port with its data in a temp
 * folder, and a canary listener that counts whatever reaches it. `.ci/run`
 * installs the packages when they are missing. A redis-server:
 * `./redis.ts`.
 *
 * @module
 */
import { join } from "node:path";
import { freePort } from "./free_port.ts";
import { stopChild } from "./stop_child.ts";
import { removeTree, tempDir } from "./temp_dir.ts";

/** A started service: its port, and how to stop it (its data removed). */
export interface Service {
  port: number;
  [Symbol.asyncDispose](): Promise<void>;
}

async function _waitFor(port: number, child: Deno.ChildProcess, what: string): Promise<void> {
  const until = Date.now() + 30_000;
  let exited = false;
  child.status.then(() => exited = true);
  while (Date.now() < until && !exited) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return;
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not start on port ${port}${exited ? " (it exited)" : ""}`);
}

async function _stop(child: Deno.ChildProcess, dir: string): Promise<void> {
  await stopChild(child);
  try {
    removeTree(dir);
  } catch { /* tried again when the module unloads */ }
}

/** Debian's PostgreSQL binaries (`/usr/lib/postgresql/N/bin`), newest first. */
function _pgBin(): string {
  const versions: number[] = [];
  try {
    for (const e of Deno.readDirSync("/usr/lib/postgresql")) {
      if (/^\d+$/.test(e.name)) versions.push(Number(e.name));
    }
  } catch { /* none */ }
  const v = versions.sort((a, b) => b - a)[0];
  if (v === undefined) {
    throw new Error("PostgreSQL is not installed (apt-get install postgresql; .ci/run does it)");
  }
  return `/usr/lib/postgresql/${v}/bin`;
}

/**
 * A PostgreSQL server of the test's own: `initdb` of a fresh cluster (user
 * `corral`, trust on 127.0.0.1) in a temp folder, run as the `postgres`
 * account (it refuses root), listening on 127.0.0.1 at a free port; `sql`
 * runs first (through psql).
 */
export async function startPostgres(sql: string): Promise<Service> {
  const bin = _pgBin();
  const dir = await tempDir("corral_test_pg_");
  await Deno.chmod(dir, 0o755);
  const data = join(dir, "data");
  const asPostgres = (cmd: string, args: string[]) =>
    new Deno.Command("setpriv", {
      args: ["--reuid=postgres", "--regid=postgres", "--init-groups", "--", cmd, ...args],
      stdout: "piped",
      stderr: "piped",
      cwd: dir,
    });
  await new Deno.Command("chown", { args: ["postgres:postgres", dir] }).output();
  const init = await asPostgres(join(bin, "initdb"), [
    "-D",
    data,
    "-U",
    "corral",
    "--auth=trust",
    "--no-sync",
  ]).output();
  if (!init.success) throw new Error(`initdb: ${new TextDecoder().decode(init.stderr)}`);
  const port = freePort();
  const child = asPostgres(join(bin, "postgres"), [
    ...["-D", data, "-p", String(port), "-k", dir],
    ...["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"],
  ]).spawn();
  child.stdout.cancel();
  child.stderr.cancel();
  await _waitFor(port, child, "postgres");
  const psql = await _psqlOnceUp(join(bin, "psql"), port, sql);
  if (!psql.success) {
    await _stop(child, dir);
    throw new Error(`psql: ${new TextDecoder().decode(psql.stderr)}`);
  }
  return { port, [Symbol.asyncDispose]: () => _stop(child, dir) };
}

/**
 * Runs `sql` through psql. The port opens before the server takes queries
 * ("the database system is starting up"): asked again until it does, for
 * at most 30 s.
 */
async function _psqlOnceUp(psql: string, port: number, sql: string): Promise<Deno.CommandOutput> {
  const until = Date.now() + 30_000;
  for (;;) {
    const out = await new Deno.Command(psql, {
      args: ["-h", "127.0.0.1", "-p", String(port), "-U", "corral", "-d", "postgres", "-c", sql],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const starting = new TextDecoder().decode(out.stderr).includes("starting up");
    if (out.success || !starting || Date.now() > until) return out;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A listener that must never be reached: TCP on 127.0.0.1 and ::1, and UDP, at one port. */
export interface Canary {
  port: number;
  /** What reached it: each TCP accept and each UDP datagram. */
  hits: string[];
  [Symbol.asyncDispose](): Promise<void>;
}

/** Start a {@link Canary}. */
export async function startCanary(): Promise<Canary> {
  const hits: string[] = [];
  const port = freePort();
  const tcp = [Deno.listen({ hostname: "127.0.0.1", port })];
  try {
    tcp.push(Deno.listen({ hostname: "::1", port }));
  } catch { /* no IPv6 here */ }
  for (const l of tcp) {
    (async () => {
      for await (const c of l) {
        hits.push(`tcp ${(l.addr as Deno.NetAddr).hostname}`);
        c.close();
      }
    })().catch(() => {});
  }
  const dgram = (await import("node:dgram")).default;
  const udp = dgram.createSocket("udp4");
  udp.on("message", () => hits.push("udp"));
  await new Promise<void>((r) => udp.bind(port, "127.0.0.1", r));
  return {
    port,
    hits,
    [Symbol.asyncDispose]() {
      for (const l of tcp) l.close();
      udp.close();
      return Promise.resolve();
    },
  };
}
