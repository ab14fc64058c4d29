import assert from "node:assert/strict";
import { runCli, tempLayout } from "../../_helpers.ts";

interface Row {
  sandbox: string;
  isolation: string;
  tools: string[];
  pid: number | null;
  rss: number | null;
  pss: number | null;
  processes: number | null;
  error: string | null;
}

Deno.test("corral stats starts every sandbox of the loaded tools and reads its memory (RSS, PSS) from /proc, without --allow-all", async () => {
  const { ws } = await tempLayout();
  // files read-only in a worker: its memory is the host's; system in a process sandbox.
  const policy = `${ws}/../stats-permissions.json`;
  await Deno.writeTextFile(
    policy,
    JSON.stringify({ toolsets: { files: { isolation: "worker" } } }),
  );
  const { code, stdout, stderr } = await runCli(
    ["stats", "--json", "-rwx", "--permissions", policy],
    { cwd: ws },
  );
  assert.equal(code, 0, stderr);
  const rows = JSON.parse(stdout) as Row[];
  const [host] = rows;
  assert.equal(host.sandbox, "host");
  assert.ok(host.rss! > 20 * 1048576, `the host holds a Deno: ${host.rss}`);

  const bash = rows.find((r) => r.tools.includes("RunBashCode"))!;
  assert.equal(bash.isolation, "process");
  assert.equal(bash.error, null);
  assert.ok(Number.isInteger(bash.pid) && bash.pid !== host.pid);
  // The sandbox's whole tree (its launcher, bwrap's processes and Deno): above one Deno's RSS.
  assert.ok(bash.rss! > 20 * 1048576, `RSS ${bash.rss}`);
  assert.ok(bash.pss! > 0 && bash.pss! <= bash.rss!, `PSS ${bash.pss} of RSS ${bash.rss}`);
  assert.ok(bash.processes! >= 2, `${bash.processes} processes`);

  const read = rows.find((r) => r.tools.includes("ReadFile"))!;
  assert.equal(read.isolation, "worker");
  assert.deepEqual([read.pid, read.rss, read.pss], [null, null, null], "a worker is the host's");

  // Every sandbox it started ended with it.
  for (const r of rows.slice(1)) {
    if (r.pid !== null) assert.equal(await _alive(r.pid), false, `${r.sandbox} still runs`);
  }
});

Deno.test("corral stats prints a table a person reads, one line a sandbox", async () => {
  const { ws } = await tempLayout();
  const { code, stdout } = await runCli(["stats", "-r"], { cwd: ws });
  assert.equal(code, 0);
  const lines = stdout.trim().split("\n");
  assert.match(lines[0], /^SANDBOX\s+ISOLATION\s+PID\s+RSS MiB\s+PSS MiB\s+TOOLS$/);
  assert.match(lines[1], /^host\s+host\s+\d+\s+\d+\.\d\s+/);
  const files = lines.find((l) => l.startsWith("files[r]"));
  assert.ok(files, stdout);
  assert.match(files, /^files\[r\]\s+process\s+\d+\s+\d+\.\d\s+\d+\.\d\s+.*ReadFile/);
});

async function _alive(pid: number): Promise<boolean> {
  try {
    await Deno.stat(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}
