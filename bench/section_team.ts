/**
 * Section 11 of the benchmarks: a team (issue 22). Many sessions from
 * several identities calling at once through one `corral mcp --http`
 * (bench/team_load.ts), with a sandbox per session and with the sessions of
 * an identity sharing sandboxes; what identity checks and telemetry cost on
 * a warm HTTP call (bench/identity_overhead.ts, interleaved A/B); and what
 * limits shared through Redis cost on one (bench/shared_state_overhead.ts).
 *
 * @module
 */
import { fmtMs, runChild } from "./lib.ts";
import { goal, log, SECTIONS, type Sizes, table } from "./report.ts";
import type { IdentityOverheadResult } from "./identity_overhead.ts";
import type { SharedStateOverheadResult } from "./shared_state_overhead.ts";
import type { TeamLoadResult } from "./team_load.ts";

/** Run section 11; returns its Markdown. */
export async function sectionTeam(sizes: Sizes): Promise<string> {
  const { teamSeconds: s, teamIdentities: ids, teamPerIdentity: per, teamIdle: idle } = sizes;
  const runs: TeamLoadResult[] = [];
  for (const share of [0, 1]) {
    log(`11. a team: ${ids} identities × ${per} sessions for ${s} s, shared sandboxes: ${!!share}`);
    runs.push(
      await runChild<TeamLoadResult>("team_load.ts", [s, ids, per, share, idle].map(String)),
    );
  }
  log(`11. identity checks and telemetry on a warm HTTP call (${sizes.overheadCalls} calls each)`);
  const o = await runChild<IdentityOverheadResult>("identity_overhead.ts", [
    String(sizes.overheadCalls),
  ]);
  log(`11. a warm HTTP call with limits in Redis (--shared-state) and without`);
  const shared = await runChild<SharedStateOverheadResult>("shared_state_overhead.ts", [
    String(sizes.overheadCalls),
  ]);
  const total = (r: TeamLoadResult) => Object.values(r.calls).reduce((a, b) => a + b, 0);
  const refused = runs.reduce((a, r) => a + r.refused, 0);
  const all = runs.reduce((a, r) => a + total(r) + r.refused, 0);
  goal({
    id: "11a",
    goal: `${ids * per} sessions from ${ids} identities: none refused below the caps`,
    corral: `${refused} refused of ${all}`,
    baseline: "0",
    ratio: NaN,
    target: "0 refused",
    pass: refused === 0 && all > 0,
  });
  goal({
    id: "11b",
    goal: "identity checks + telemetry on a warm HTTP call",
    corral: fmtMs(o.identities),
    baseline: fmtMs(o.plain),
    ratio: o.ratio,
    target: "≤ 1.05×",
    pass: o.ratio <= 1.05,
  });
  goal({
    id: "11c",
    goal: "a warm HTTP call with calls per minute counted in Redis (--shared-state)",
    corral: fmtMs(shared.redis),
    baseline: fmtMs(shared.local),
    ratio: shared.ratio,
    target: "≤ 1.10×",
    pass: shared.ratio <= 1.10,
  });
  const mib = (v: number) => `${v.toFixed(0)} MiB`;
  const mode = (r: TeamLoadResult) => r.shared ? "shared per identity" : "one per session";
  return [
    SECTIONS[12],
    "",
    `\`bench/team_load.ts\`: one \`corral mcp --http\` with ${ids} identities (static tokens), ` +
    `${ids * per} SDK sessions (${per} per identity) open at once, each calling \`ReadFile\` and ` +
    `\`RunBashCode\` (\`echo hi\`) in turn for ${s} s. Caps above the load: --max-sessions 2000, ` +
    "--max-concurrent 200, --max-queue 4000, --max-client-conns 4000, --max-sandboxes 400 (the " +
    "default, 64, would evict idle sandboxes and refuse a call when all 64 run one); each " +
    "identity's own caps stay at their defaults, above its 10 sessions too (64 sessions, 100 " +
    "calls at once, 64 waiting, 64 requests in flight). Run twice: a " +
    "sandbox per session (the default) and `share_sandboxes` for every identity. Memory is summed " +
    "over the server's process tree at the end of the load (RSS counts deno's shared pages once " +
    "per process; PSS divides them). Before the timed loop, a warm-up: every session's first " +
    "call of each tool at once (each starts a sandbox, or with sharing finds its identity's). " +
    "Then the sessions stay idle past `--session-idle " +
    `${idle}\`: they expire and their sandboxes close (a session with a call in flight is never ` +
    "idle, however long the call waits: the warm-up's calls wait for up to 200 sandbox starts " +
    "on 2 cores).",
    "",
    table(
      [
        "sandboxes",
        "calls",
        "refused",
        "ReadFile p50 / p99",
        "RunBashCode p50 / p99",
        "RSS",
        "PSS",
        "warm-up (first calls p50 / max)",
        "sandboxes live",
        `after ${idle} s idle`,
      ],
      runs.map((r) => [
        mode(r),
        String(total(r)),
        String(r.refused) + (r.firstError ? ` (first: ${r.firstError.slice(0, 120)})` : ""),
        `${fmtMs(r.p50.ReadFile)} / ${fmtMs(r.p99.ReadFile)}`,
        `${fmtMs(r.p50.RunBashCode)} / ${fmtMs(r.p99.RunBashCode)}`,
        mib(r.rss),
        mib(r.pss),
        `${fmtMs(r.warmupMs)} (${fmtMs(r.firstP50)} / ${fmtMs(r.firstMax)})`,
        String(r.sandboxesLoaded),
        String(r.sandboxesAfterIdle),
      ]),
    ),
    "",
    "`bench/identity_overhead.ts`: the same tool over the real HTTP server, one call at a time, " +
    "interleaved call by call: the plain bearer token against identities (a static token looked " +
    "up in the tokens file, the identity's registry view, its span and metrics).",
    "",
    table(
      ["warm HTTP call", "median", "calls"],
      [
        ["plain token", fmtMs(o.plain), String(o.calls)],
        ["identities and telemetry", fmtMs(o.identities), String(o.calls)],
      ],
    ),
    "",
    "`bench/shared_state_overhead.ts`: the same tool over the real HTTP server, one call at a " +
    "time, interleaved call by call, by an identity with `per_minute` 60,000 (every call takes " +
    "from its bucket, none is refused): the bucket in the replica's memory against the bucket " +
    "in a real Redis (`--shared-state`, Debian's redis-server on loopback), leased a second's " +
    "worth (1000 calls) per round trip.",
    "",
    table(
      ["warm HTTP call", "median", "calls"],
      [
        ["limits in this replica", fmtMs(shared.local), String(shared.calls)],
        ["limits in Redis", fmtMs(shared.redis), String(shared.calls)],
      ],
    ),
  ].join("\n");
}
