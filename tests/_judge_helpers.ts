// Helpers of the judge's attack tests (issue 37): a workspace, a registry whose jailed
// bash writes it, and the user's own git run outside any sandbox.
import assert from "node:assert/strict";
import { parsePolicy } from "../core/config/policy.ts";
import { Registry } from "../core/registry/registry.ts";
import { Reporter } from "../core/tool/reporter.ts";
import { tempLayout } from "./_helpers.ts";

/** The user's own git: no sandbox, the host's environment (plus `env`). */
export async function userGit(cwd: string, args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command("git", {
    args: ["-c", "user.name=User", "-c", "user.email=user@example.com", ...args],
    cwd,
    stdout: "piped",
    stderr: "piped",
    env: { GIT_CONFIG_NOSYSTEM: "1", GIT_EDITOR: "true", ...env },
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, text: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

/** A workspace (a git repository with one commit when `repo`), a canary path outside. */
export async function judgeLayout(repo = true) {
  const { base, ws, outside } = await tempLayout();
  if (repo) {
    assert.equal((await userGit(ws, ["init", "-q"])).code, 0);
    await Deno.writeTextFile(`${ws}/a.txt`, "one\n");
    await userGit(ws, ["add", "a.txt"]);
    assert.equal((await userGit(ws, ["commit", "-q", "-m", "init"])).code, 0);
  }
  return { base, ws, outside, canary: `${outside}/CANARY`, audit: `${outside}/audit.jsonl` };
}

/** A registry whose system toolset (jailed bash, git) writes `ws`, auditing to `audit`. */
export async function bashRegistry(ws: string, outside: string, audit?: string): Promise<Registry> {
  const policy = parsePolicy(
    JSON.stringify({ toolsets: { system: { run: ["bash", "git"], read: ["."], write: ["."] } } }),
    `${outside}/policy.json`,
    ws,
  );
  const registry = await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    auditPath: audit,
    reporter: new Reporter({ sink: () => {}, color: false }),
  });
  assert.equal(registry.get("RunBashCode")?.status, "loaded", JSON.stringify(registry.problems));
  return registry;
}

/** Jailed bash, git's identity set. */
export function bash(registry: Registry, code: string, principal?: string) {
  return registry.call("RunBashCode", {
    code: `export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t ` +
      `GIT_COMMITTER_EMAIL=t@t; ${code}`,
  }, principal ? { principal } : undefined);
}

/** Whether anything is at `p`. */
export async function exists(p: string): Promise<boolean> {
  return await Deno.lstat(p).then(() => true, () => false);
}

/** The audit lines of `file` (parsed). */
// deno-lint-ignore no-explicit-any
export async function auditLines(file: string): Promise<Array<Record<string, any>>> {
  return (await Deno.readTextFile(file)).trim().split("\n").map((l) => JSON.parse(l));
}

/** A shell command, run outside any sandbox; its stdout. */
export async function sh(cwd: string, script: string): Promise<string> {
  const out = await new Deno.Command("sh", {
    args: ["-c", script],
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout);
}
