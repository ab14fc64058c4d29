// Real services the tests start themselves (never a system service): Debian's
// PostgreSQL and redis-server, each on a free port with its data in a temp
// folder, and a canary listener that counts whatever reaches it. .ci/run
// installs the packages (postgresql, redis-server) when they are missing.
import { join } from "node:path";

/** A free TCP port on 127.0.0.1 (bound, then released). */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

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
  try {
    child.kill("SIGTERM");
  } catch { /* gone */ }
  const late = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
  }, 5_000);
  await child.status;
  clearTimeout(late);
  await Deno.remove(dir, { recursive: true }).catch(() => {});
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
  const dir = await Deno.makeTempDir({ prefix: "corral_pg_" });
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

/** A redis-server of the test's own, on 127.0.0.1 at a free port, nothing saved. */
export async function startRedis(): Promise<Service> {
  const dir = await Deno.makeTempDir({ prefix: "corral_redis_" });
  const port = freePort();
  const child = new Deno.Command("redis-server", {
    args: [
      ...["--port", String(port), "--bind", "127.0.0.1", "--dir", dir],
      ...["--save", "", "--appendonly", "no", "--protected-mode", "no"],
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
  await _waitFor(port, child, "redis-server");
  return { port, [Symbol.asyncDispose]: () => _stop(child, dir) };
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
