/**
 * What a tool's harness does before a call, as corral's discovery does in a
 * sandbox: `TOOL_SETUP(config)` with the plugin's own section of
 * `corral.json` (`services.<plugin>`), then `is_configured()`. The section
 * comes from `corral harness FILE` (core/cli/harness_command.ts), which
 * resolves corral's settings and passes it in the environment; a tool file
 * run alone (`deno run -A FILE`) hands itself over to `corral harness`, so
 * both ways run the tool with the same section.
 *
 * @module
 */

/** The plugin's config section, as `corral harness` resolved it. */
export interface HarnessSetup {
  /** The plugin's name (its file stem): `services.<plugin>`, `plugins.<plugin>`. */
  plugin?: string;
  /** Its section of `corral.json` (absent: `{}`, as corral passes). */
  config?: unknown;
  /** Where the section comes from, for messages: `services.rates of /…/corral.json`. */
  configFrom?: string;
}

/** The environment variable `corral harness` passes a {@link HarnessSetup} in (JSON). */
export const HARNESS_ENV = "CORRAL_HARNESS";

/**
 * The setup `corral harness` passed, or undefined when this process was not
 * started by it (or may not read the environment).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { setupFromEnv } from "./harness_setup.ts";
 * assert.equal(setupFromEnv(), undefined);
 * ```
 */
export function setupFromEnv(): HarnessSetup | undefined {
  let text: string | undefined;
  try {
    text = Deno.env.get(HARNESS_ENV);
  } catch {
    return undefined;
  }
  if (!text) return undefined;
  try {
    const value = JSON.parse(text);
    return value && typeof value === "object" ? value as HarnessSetup : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Run a module's `TOOL_SETUP(config)` and `is_configured()`, as discovery
 * does; returns why the module is not ready (it is then refused), or
 * undefined.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { moduleSetup } from "./harness_setup.ts";
 * let seen: unknown;
 * const ns = { TOOL_SETUP: (c: unknown) => (seen = c), is_configured: () => false };
 * const why = await moduleSetup(ns, { plugin: "rates", config: { currency: "EUR" } });
 * assert.deepEqual(seen, { currency: "EUR" });
 * assert.match(why!, /rates is not configured \(is_configured\(\) returned false\)/);
 * ```
 */
export async function moduleSetup(
  ns: Record<string, unknown>,
  setup: HarnessSetup = {},
): Promise<string | undefined> {
  const name = setup.plugin ?? "the module";
  const given = setup.configFrom ??
    `{} (corral harness FILE passes the plugin's services section of corral.json)`;
  const hook = typeof ns.TOOL_SETUP === "function" ? "TOOL_SETUP" : "is_configured";
  try {
    if (typeof ns.TOOL_SETUP === "function") await ns.TOOL_SETUP(setup.config ?? {});
    if (typeof ns.is_configured === "function" && (await ns.is_configured()) === false) {
      return `${name} is not configured (is_configured() returned false)` +
        (typeof ns.TOOL_SETUP === "function" ? `; TOOL_SETUP got ${given}` : "");
    }
  } catch (err) {
    return `${name}: ${hook} threw: ${err instanceof Error ? err.message : String(err)}`;
  }
  return undefined;
}

/**
 * Hand a tool file run alone (`deno run -A FILE ARGS`) over to `corral
 * harness FILE ARGS` of the corral this module belongs to, which runs it
 * with the plugin's config section; returns its exit code, or undefined
 * when it cannot (already under `corral harness`, the main module is no
 * local file, or this process may not start Deno).
 */
export async function delegateToCorral(argv: string[]): Promise<number | undefined> {
  if (setupFromEnv() !== undefined || !import.meta.url.startsWith("file:")) return undefined;
  let main: string;
  try {
    if (!Deno.mainModule.startsWith("file:")) return undefined;
    main = decodeURIComponent(new URL(Deno.mainModule).pathname);
    const deno = Deno.execPath();
    if (Deno.permissions.querySync({ name: "run", command: deno }).state !== "granted") {
      return undefined;
    }
    const root = decodeURIComponent(new URL("../../", import.meta.url).pathname);
    const child = new Deno.Command(deno, {
      // The host's flags (core/sandbox/host_flags.ts), on corral's own config and lock.
      args: [
        "run",
        "--allow-read",
        "--allow-write",
        "--allow-run",
        "--allow-net",
        "--allow-env",
        "--allow-sys",
        "--config",
        `${root}deno.json`,
        `${root}main.ts`,
        "harness",
        main,
        ...argv,
      ],
      stdin: "inherit",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn();
    return (await child.status).code;
  } catch {
    return undefined;
  }
}
