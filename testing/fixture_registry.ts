/**
 * A registry over fixture tool modules only (no built-in toolsets, no
 * discovery cache), as the tests and the bench build one in process.
 *
 * @module
 */
import { parsePolicy } from "../core/config/mod.ts";
import { Registry, type RegistryOptions } from "../core/registry/mod.ts";
import { Reporter } from "../core/tool/mod.ts";
import { FIXTURES } from "./paths.ts";

/**
 * A registry over `modules` (names under tests/fixtures/, or absolute
 * paths) as toolset "fixture" under `toolsetPolicy`, working in
 * `workspace`; `extra` adds top-level keys of permissions.json, `options`
 * registry options (an audit log, say). `lines` collects what its reporter
 * printed.
 */
export async function fixtureRegistry(
  modules: string[],
  toolsetPolicy: Record<string, unknown>,
  workspace: string,
  extra: Record<string, unknown> = {},
  options: Partial<RegistryOptions> = {},
): Promise<{ registry: Registry; lines: string[] }> {
  const lines: string[] = [];
  const policy = parsePolicy(
    JSON.stringify({ toolsets: { fixture: toolsetPolicy }, ...extra }),
    "test-permissions.json",
    workspace,
  );
  const registry = await Registry.create({
    workspace,
    policy,
    noBuiltins: true,
    cacheDir: null,
    reporter: new Reporter({ sink: (t) => lines.push(t), color: false }),
    sources: [{
      id: "fixture",
      kind: "builtin",
      modules: modules.map((m) => m.startsWith("/") ? m : `${FIXTURES}${m}`),
      policy: policy.toolset("fixture"),
    }],
    ...options,
  });
  return { registry, lines };
}
