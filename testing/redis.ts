/**
 * A real redis-server (Debian's, installed by `.ci/run`) of the caller's
 * own: on a free loopback port, nothing saved, its folder a temp folder.
 * Never a system service.
 *
 * @module
 */
import { firstFile } from "./first_file.ts";
import { freePort } from "./free_port.ts";
import { removeTree, tempDir } from "./temp_dir.ts";

/** The redis-server binary, or undefined when it is not installed. */
export const REDIS_SERVER: string | undefined = firstFile([
  "/usr/bin/redis-server",
  "/usr/local/bin/redis-server",
]);

/** A running redis-server. */
export interface TestRedis {
  /** `redis://127.0.0.1:PORT`. */
  url: string;
  port: number;
  /** Stop it (SIGKILL) as a crash would; `start` brings it back on the same port. */
  kill(): Promise<void>;
  /** Start it again on the same port (after `kill`). */
  start(): Promise<void>;
  /** Stop it and remove its folder. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Start a redis-server on a free port and wait until it answers PING. */
export async function startRedis(): Promise<TestRedis> {
  if (!REDIS_SERVER) throw new Error("redis-server is not installed (.ci/run installs it)");
  const server = REDIS_SERVER;
  const dir = await tempDir("corral_test_redis_");
  const port = freePort();
  let child: Deno.ChildProcess | undefined;
  const start = async () => {
    child = new Deno.Command(server, {
      args: [
        ...["--port", String(port), "--bind", "127.0.0.1", "--dir", dir],
        ...["--save", "", "--appendonly", "no", "--protected-mode", "no"],
      ],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    for (let i = 0; i < 200; i++) {
      if (await _pong(port)) return;
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
    async [Symbol.asyncDispose]() {
      await kill();
      try {
        removeTree(dir);
      } catch { /* tried again when the module unloads */ }
    },
  };
}

/** Whether a redis-server on `port` answers PING. */
async function _pong(port: number): Promise<boolean> {
  try {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    try {
      await conn.write(new TextEncoder().encode("PING\r\n"));
      const buf = new Uint8Array(16);
      const n = await conn.read(buf);
      return !!n && new TextDecoder().decode(buf.subarray(0, n)).startsWith("+PONG");
    } finally {
      conn.close();
    }
  } catch {
    return false; // not yet
  }
}
