// Keeps `deno task bench` from rotting: the smoke mode (tiny counts) must run
// every section and write a report that has all of them.
import assert from "node:assert/strict";
import { ROOT } from "../testing/mod.ts";
import { SECTIONS } from "../bench/run.ts";

// A verdict, or UNRELIABLE where the machine was loaded during the section (bench/load_watch.ts).
const VERDICT = String.raw`(\*\*(PASS|MISS)\*\*|UNRELIABLE \((PASS|MISS) under load\))`;

Deno.test({
  name: "deno task bench --smoke runs every section and writes a complete report",
  // The bench's child processes and sandboxes end with the run; nothing leaks into this test.
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "corral_bench_smoke_" });
    const out = `${dir}/BENCHMARKS.md`;
    try {
      const res = await new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-all", `${ROOT}bench/run.ts`, "--smoke", "--out", out],
        cwd: ROOT,
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(res.stderr);
      assert.equal(res.code, 0, `bench --smoke failed:\n${stderr.slice(-3000)}`);
      const report = await Deno.readTextFile(out);
      for (const heading of SECTIONS) assert.ok(report.includes(`\n${heading}`), heading);
      assert.match(report, /smoke run/);
      assert.match(report, new RegExp(`\\| 1a \\|.*${VERDICT}`));
      assert.match(report, new RegExp(`\\| 6a \\|.*${VERDICT}`));
      assert.match(report, new RegExp(`\\| 8a \\|.*${VERDICT}`));
      // Section 7: the syscall filter's cost (goal 7), fd binding against the same namespace
      // bound by name, and a cold call now.
      assert.match(report, new RegExp(`\\| 7 \\|.*${VERDICT}`));
      assert.match(report, /\| measurement \| with the filter \| without it \| with ÷ without \|/);
      assert.match(report, /\| by name \(before\) \| [\d.]+ [µm]?s \|/);
      assert.match(report, /\| `corral call ListFiles` \| [\d.]+ [µm]?s \|/);
      // Section 9: a database query through the egress proxy, against the same server with jail off.
      assert.match(
        report,
        /\| \*\*in the jail\*\*: through the egress proxy \(the server's own connection\) \| [\d.]+ [µm]?s \|/,
      );
      // Section 11: the team load, per session and shared, reaped when idle; the identity overhead.
      assert.match(report, new RegExp(`\\| 11a \\|.*${VERDICT}`));
      assert.match(report, new RegExp(`\\| 11b \\|.*${VERDICT}`));
      // Section 13: a day of serving, its row judged.
      assert.match(report, new RegExp(`\\| 13 \\|.*${VERDICT}`));
      assert.match(report, /\| one per session \| \d+ \| 0 \|/);
      assert.match(report, /\| shared per identity \| \d+ \| 0 \|.* \| 0 \|\n/);
      // Section 12: settling against cp -a, and the host's memory while it settles.
      assert.match(report, new RegExp(`\\| 12a \\|.*${VERDICT}`));
      assert.match(report, new RegExp(`\\| 12c \\|.*${VERDICT}`));
      assert.match(report, /\| 2000 empty files in one folder \| [\d.]+ [µm]?s \|/);
      // Section 4: a cold start with no plugins against a warm one (goal 4d).
      assert.match(report, new RegExp(`\\| 4d \\|.*${VERDICT}`));
      // Every section measured says how loaded the machine was while it ran.
      const loads = report.match(/\nLoad: 1-, 5-, 15-minute load average /g) ?? [];
      assert.equal(loads.length, 12, "a Load line per section run");
      assert.doesNotMatch(report, /Failed in this run/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
