/**
 * Section 13 of the benchmarks: a day of serving (issue 39). One `corral mcp`
 * session driven with many calls (bench/soak.ts); the host's RSS after the
 * warm-up against its end, and what it holds (descriptors, child processes,
 * cgroups, layer folders, temp files) against its baseline once the session
 * ended; the audit log against its rotation bound.
 *
 * @module
 */
import { fmtMiB, runChild, sig } from "./lib.ts";
import { goal, log, SECTIONS, type Sizes, table } from "./report.ts";
import type { Held, SoakResult } from "./soak.ts";

/** The audit log's bound in the soak: small, so that it rotates many times. */
export const SOAK_AUDIT_BYTES = 2 * 1024 * 1024;

/** Run section 13; returns its Markdown. */
export async function sectionSoak(sizes: Sizes): Promise<string> {
  const n = sizes.soakCalls;
  const warmup = Math.floor(n / 10);
  log(`13. a day of serving: one session, ${n} calls`);
  const r = await runChild<SoakResult>("soak.ts", [
    String(n),
    String(warmup),
    String(SOAK_AUDIT_BYTES),
  ]);
  const keys: Array<keyof Held> = ["fds", "children", "cgroups", "layers", "temp"];
  const back = keys.every((k) => r.afterSession[k] <= r.baseline[k]) &&
    (["cgroups", "layers", "temp"] as const).every((k) => r.afterExit[k] <= r.start[k]);
  const audit = r.auditBytes <= r.auditBound + 5 * r.auditLongestLine;
  goal({
    id: "13",
    goal: `a day of serving (${n} calls, one session): host RSS growth after warm-up ≤ 10%, ` +
      "what it holds back to its baseline, the audit log within its bound",
    corral: `${sig(r.rssGrowth * 100)}% RSS; ${back ? "back" : "NOT back"} to baseline; audit ` +
      `${fmtMiB(r.auditBytes)}`,
    baseline: `${fmtMiB(r.rssWarm)} after warm-up`,
    ratio: r.rssEnd / r.rssWarm,
    target: "≤ 1.10×, back, within bound",
    pass: r.rssGrowth <= 0.1 && back && audit,
  });
  const row = (name: string, h: Held) => [name, ...keys.map((k) => String(h[k]))];
  return [
    SECTIONS[14],
    "",
    "`bench/soak.ts`: one `corral mcp --http` session, calls in a fixed mix of every 20: 9 of a " +
    "worker toolset (`files`, isolation worker), 2 reads and 2 writes by RunBashCode (a process " +
    "sandbox with a write layer), 6 of a hosted server with a write grant " +
    "(`tests/fixtures/hosted/state_server.ts`: 5 reads and remembers, one write), one refusal " +
    "(a protected file written, or a tool whose confirmation no client gives) and one " +
    "cancellation (a process call or a hosted call, cancelled after 50 ms); the hosted server " +
    "crashes once, in the middle. The baseline is the idle server after two first, short sessions. " +
    `The audit log's bound is ${fmtMiB(r.auditBound)}.`,
    "",
    table(
      ["", "calls", "warm-up", "time", "RSS after warm-up", "RSS at the end", "growth"],
      [[
        "",
        String(r.calls),
        String(r.warmup),
        `${sig(r.seconds)} s`,
        fmtMiB(r.rssWarm),
        fmtMiB(r.rssEnd),
        `${sig(r.rssGrowth * 100)}%`,
      ]],
    ),
    "",
    table(
      ["the server holds", ...keys],
      [
        row("up, before any session", r.start),
        row("baseline (after two first sessions)", r.baseline),
        row("at the end of the calls", r.during),
        row("the session ended", r.afterSession),
        row("the server exited", r.afterExit),
      ],
    ),
    "",
    `Calls by kind: ${Object.entries(r.kinds).map(([k, v]) => `${k} ${v}`).join(", ")}; by ` +
    `outcome: ${Object.entries(r.outcomes).map(([k, v]) => `${k} ${v}`).join(", ")}; hosted ` +
    `server starts seen: ${r.serverIds}. Audit log: ${fmtMiB(r.auditBytes)} in its files ` +
    `(${r.auditRotated ? "rotated" : "not rotated"}; bound ${fmtMiB(r.auditBound)}).` +
    (r.extraFds.length ? ` Descriptors left after the session: ${r.extraFds.join(", ")}.` : ""),
  ].join("\n");
}
