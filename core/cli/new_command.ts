/**
 * `corral new NAME [--permissions LETTERS] [--dir DIR] [--style class|module]`:
 * write a working tool file and its test, and say which policy entry would
 * grant its letters.
 *
 * @module
 */
import { defaultPluginDir } from "../plugins/plugins.ts";
import { scaffoldTool } from "../plugins/scaffold.ts";
import { loadConfig } from "../config/corral_config.ts";
import { type CliValues, UsageError } from "./options.ts";
import { out } from "./output.ts";

/** Run `corral new`; returns the exit code. */
export async function newCommand(values: CliValues, rest: string[]): Promise<number> {
  // Only the config is needed (its first tool_dirs entry), not a workspace.
  const dir = values.dir ?? (await loadConfig({ file: values.config })).toolDirs[0] ??
    defaultPluginDir();
  if (!rest[0]) throw new UsageError("new needs a tool name: corral new NAME --permissions r");
  let made;
  try {
    made = await scaffoldTool({
      name: rest[0],
      permissions: values.permissions ?? "",
      dir,
      style: (values.style ?? "class") as "class" | "module",
    });
  } catch (err) {
    if (err instanceof TypeError) throw new UsageError(err.message);
    throw err;
  }
  out(`wrote ${made.file}\nwrote ${made.test}`);
  if (made.policyHint) {
    out(`Plugins get no permissions by default; grant them in permissions.json:`);
    out(`  ${made.policyHint}`);
  }
  out(`Check it with: corral check ${made.file}`);
  return 0;
}
