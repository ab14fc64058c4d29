/**
 * The launch plan a `corral call` needed last time, kept in corral's cache
 * (`prestart/<key>.json`, the key a hash of the folder, the environment
 * that shapes the settings, the tool and the options), so that the next
 * identical command can start that sandbox at once, while the host loads
 * (core/sandbox/prestart.ts). The plan is only a guess: the sandbox is
 * adopted when the plan worked out then is exactly the same, else stopped.
 * `corral mcp` on stdio keeps the first sandbox its session started the
 * same way (`prestartMcp`): the first call of the next session finds it
 * running. No cache (`CORRAL_CACHE_DIR=""`, `--no-cache`): nothing is
 * started ahead.
 *
 * @module
 */
import { join } from "node:path";
import { envVar } from "../config/mod.ts";
import { type LimitsProbe, limitsProbe } from "../jail/mod.ts";
import { defaultCacheDir } from "../registry/mod.ts";
import { type LaunchPlan, prestart, recordNextLaunch } from "../sandbox/mod.ts";
import type { CliValues } from "./_options.ts";
import { userCwd } from "./_user_cwd.ts";

/** Recipes kept at most; the oldest go first. */
const _KEEP = 64;

/** Options that do not change which sandbox a call needs. */
const _NOT_PLAN = new Set(["args", "yes", "timeout", "quiet", "json"]);

let _file: string | undefined;
let _known: string | undefined;

/**
 * Start the sandbox `corral call NAME` needed last time with these options,
 * if it is known; and make the call's own launch plan the one kept.
 */
export async function prestartCall(values: CliValues, name: string): Promise<void> {
  const cache = defaultCacheDir();
  if (!cache || values["no-cache"]) return;
  _file = join(cache, "prestart", `${await _key(values, name)}.json`);
  try {
    _known = Deno.readTextFileSync(_file);
    const recipe = JSON.parse(_known) as {
      v: number;
      plan: LaunchPlan;
      found: LimitsProbe;
      preload: string[];
    };
    if (recipe.v === 1) prestart(recipe.plan, recipe.found, recipe.preload);
  } catch { /* none yet, or unreadable: started as usual */ }
}

/**
 * Start the sandbox that the last `corral mcp` on stdio with these options
 * started first (its first read-only launch), if it is known; and make this
 * session's first such launch the one kept. Its key is apart from every
 * `corral call NAME`'s (a tool's name has no NUL).
 */
export function prestartMcp(values: CliValues): Promise<void> {
  return prestartCall(values, "\0mcp stdio");
}

/**
 * Keep the launch plan of the call that runs next (call it right before the
 * call); of the sandbox's modules, only `module` (the called tool's) is
 * loaded ahead next time, when it is one of them.
 */
export function keepNextLaunch(module?: string): void {
  const file = _file;
  if (!file) return;
  recordNextLaunch((plan, modules) => {
    try {
      const preload = module && modules.includes(module) ? [module] : modules;
      const text = JSON.stringify({ v: 1, plan, found: limitsProbe(), preload });
      if (text === _known) return;
      Deno.mkdirSync(join(file, ".."), { recursive: true, mode: 0o700 });
      const tmp = `${file}.${crypto.randomUUID()}.tmp`;
      Deno.writeTextFileSync(tmp, text, { mode: 0o600 });
      Deno.renameSync(tmp, file);
      _prune(join(file, ".."));
    } catch { /* no recipe: the next call starts as usual */ }
  });
}

async function _key(values: CliValues, name: string): Promise<string> {
  const options = Object.entries(values).filter(([k]) => !_NOT_PLAN.has(k)).sort();
  const env = Object.entries(Deno.env.toObject()).filter(([k]) =>
    /^(CORRAL_|XDG_|HOME$|PATH$|LANG$|NO_COLOR$|DENO_DIR$|INIT_CWD$)/.test(k)
  ).sort();
  const text = JSON.stringify([name, options, userCwd(), env, Deno.execPath(), envVar("USER")]);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function _prune(dir: string): void {
  const files = [...Deno.readDirSync(dir)].filter((e) => e.name.endsWith(".json"));
  if (files.length <= _KEEP) return;
  const aged = files.map((e) => ({
    path: join(dir, e.name),
    at: Deno.statSync(join(dir, e.name)).mtime?.getTime() ?? 0,
  })).sort((a, b) => a.at - b.at);
  for (const f of aged.slice(0, files.length - _KEEP)) Deno.removeSync(f.path);
}
