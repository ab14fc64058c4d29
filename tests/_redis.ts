// A real redis-server (Debian's, installed by .ci/run) for the tests of shared state: started
// on a free loopback port, with nothing written to disk, and stopped by the test.
import { firstFile, freePort } from "./_helpers.ts";

/** The redis-server binary, or undefined when it is not installed. */
export const REDIS_SERVER = firstFile(["/usr/bin/redis-server", "/usr/local/bin/redis-server"]);

/** A running redis-server. */
export interface TestRedis {
  /** `redis://127.0.0.1:PORT`. */
  url: string;
  port: number;
  /** Stop it (SIGKILL) as a crash would; `start` brings it back on the same port. */
  kill(): Promise<void>;
  /** Start it again on the same port (after `kill`). */
  start(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Start a redis-server on a free port and wait until it answers. */
export async function startRedis(): Promise<TestRedis> {
  if (!REDIS_SERVER) throw new Error("redis-server is not installed (.ci/run installs it)");
  const port = freePort();
  let child: Deno.ChildProcess | undefined;
  const start = async () => {
    child = new Deno.Command(REDIS_SERVER, {
      args: ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    for (let i = 0; i < 100; i++) {
      try {
        const conn = await Deno.connect({ hostname: "127.0.0.1", port });
        await conn.write(new TextEncoder().encode("PING\r\n"));
        const buf = new Uint8Array(16);
        const n = await conn.read(buf);
        conn.close();
        if (n && new TextDecoder().decode(buf.subarray(0, n)).startsWith("+PONG")) return;
      } catch { /* not yet */ }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`redis-server did not answer on port ${port}`);
  };
  const kill = async () => {
    if (!child) return;
    const c = child;
    child = undefined;
    c.kill("SIGKILL");
    await c.status;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill,
    start,
    [Symbol.asyncDispose]: kill,
  };
}
