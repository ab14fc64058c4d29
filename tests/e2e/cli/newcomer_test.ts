// A newcomer's first day, from a fresh HOME and an empty Deno cache, following only the README and
// docs/AUTHORING.md: install corral, write a class tool and a module tool (both with TOOL_SETUP and
// is_configured) in ~/.config/corral/plugins/, and run each tool's own harness the documented way
// (help, a call, --json, a refusal when not configured), as corral itself would run the tool.
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { ROOT } from "../../../testing/mod.ts";

const CLASS_TOOL = `import { z } from "zod";
import { BaseTool, runHarness, tool } from "@corral/corral";

let marker = "";
export function TOOL_SETUP(config: { marker?: string }) {
  marker = config.marker ?? "";
}
export function is_configured() {
  return marker !== "";
}

const input = z.object({
  path: z.string().default(".").describe("Folder to scan, relative to the workspace"),
});

@tool({ permissions: "r", description: "Count the lines that hold the configured marker", input })
export class FindTodos extends BaseTool {
  async run({ path }: z.infer<typeof input>) {
    const dir = \`\${this.context!.workspace}/\${path}\`;
    let found = 0;
    for await (const e of Deno.readDir(dir)) {
      if (!e.isFile) continue;
      const text = await Deno.readTextFile(\`\${dir}/\${e.name}\`);
      found += text.split("\\n").filter((l) => l.includes(marker)).length;
    }
    return { success: true, marker, found };
  }
}

if (import.meta.main) await runHarness(FindTodos);
`;

// No harness line: module tools get the same harness from TOOL_CONFIGS.
const MODULE_TOOL = `import { z } from "zod";

let currency = "";
export function TOOL_SETUP(config: { currency?: string }) {
  currency = config.currency ?? "";
}
export function is_configured() {
  return currency !== "";
}

export const TOOL_CONFIGS = [{
  name: "Rate",
  description: "Quote an amount in the configured currency",
  input_schema: z.object({ amount: z.number().describe("How much") }),
  function: ({ amount }: { amount: number }) => ({ success: true, quote: \`\${amount} \${currency}\` }),
}];
`;

/** The environment of a fresh machine's user: this HOME, this empty Deno cache, nothing of corral's. */
function freshEnv(home: string, denoDir: string): Record<string, string> {
  const env = { ...Deno.env.toObject() };
  for (const key of Object.keys(env)) {
    if (/^(CORRAL_|XDG_|DENO_INSTALL_ROOT$|INIT_CWD$)/.test(key)) delete env[key];
  }
  return {
    ...env,
    HOME: home,
    DENO_DIR: denoDir,
    NO_COLOR: "1",
    PATH: `${dirname(Deno.execPath())}:${env.PATH ?? "/usr/bin:/bin"}`,
  };
}

async function sh(
  command: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(command, {
    args,
    cwd,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("a fresh HOME and an empty Deno cache: the README install, then each tool's harness where it lives, as corral runs it", async () => {
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_newcomer_" }));
  const home = join(base, "home");
  const project = join(home, "project");
  const plugins = join(home, ".config", "corral", "plugins");
  await Deno.mkdir(join(project, "src"), { recursive: true });
  await Deno.mkdir(plugins, { recursive: true });
  await Deno.mkdir(join(base, "deno"));
  const env = freshEnv(home, join(base, "deno"));
  try {
    // The README's install line, as written (the one path replaced), on an empty cache.
    const readme = await Deno.readTextFile(join(ROOT, "README.md"));
    const quick = readme.slice(readme.indexOf("## Quick start"));
    const line = /^(deno task .*install)\s+#/m.exec(/```sh\n([\s\S]*?)```/.exec(quick)![1])![1]
      .replaceAll("/path/to/corral", ROOT.replace(/\/$/, ""));
    const install = await sh("sh", ["-ec", line], home, env);
    assert.equal(install.code, 0, install.stdout + install.stderr);
    assert.doesNotMatch(
      install.stdout + install.stderr,
      /Download/,
      `no download lines:\n${install.stdout}${install.stderr}`,
    );
    const corral = join(home, ".deno", "bin", "corral");
    assert.match(install.stdout, new RegExp(`installed ${corral}`));

    await Deno.writeTextFile(join(plugins, "find_todos.ts"), CLASS_TOOL);
    await Deno.writeTextFile(join(plugins, "rates.ts"), MODULE_TOOL);
    await Deno.writeTextFile(
      join(home, ".config", "corral", "corral.json"),
      JSON.stringify({ services: { find_todos: { marker: "TODO" }, rates: { currency: "EUR" } } }),
    );
    await Deno.writeTextFile(
      join(home, ".config", "corral", "permissions.json"),
      JSON.stringify({ plugins: { find_todos: { read: ["."] } } }),
    );
    await Deno.writeTextFile(join(project, "src", "a.ts"), "// TODO one\nx\n// TODO two\n");

    // Help, from the plugin's own folder, for each style (AUTHORING.md, "Testing a tool").
    const classHelp = await sh(corral, ["harness", "find_todos.ts", "--help"], plugins, env);
    assert.equal(classHelp.code, 0, classHelp.stderr);
    assert.match(classHelp.stdout, /^Usage: FindTodos \[path\] \[options\]/);
    assert.match(classHelp.stdout, /Permissions: r \(read\)/);
    assert.doesNotMatch(classHelp.stderr, /not a dependency|jsr:/);
    const moduleHelp = await sh(corral, ["harness", "rates.ts", "--help"], plugins, env);
    assert.equal(moduleHelp.code, 0, moduleHelp.stderr);
    assert.match(moduleHelp.stdout, /^Usage: Rate \[options\]/);
    assert.match(moduleHelp.stdout, /--amount <number> +How much \(required\)/);

    // A call from the project, the first string parameter without its flag: TOOL_SETUP got "TODO".
    const found = await sh(
      corral,
      ["harness", join(plugins, "find_todos.ts"), "src"],
      project,
      env,
    );
    assert.equal(found.code, 0, found.stderr);
    assert.match(found.stdout, /^success: true\nmarker: TODO\nfound: 2\n$/);

    // --json: the same result corral call gives, for both styles (the same config section).
    const rate = await sh(
      corral,
      ["harness", join(plugins, "rates.ts"), "--amount", "5", "--json"],
      project,
      env,
    );
    assert.equal(rate.code, 0, rate.stderr);
    assert.deepEqual(JSON.parse(rate.stdout), { success: true, quote: "5 EUR" });
    const called = await sh(corral, ["-r", "call", "Rate", "--args", '{"amount":5}'], project, env);
    assert.equal(called.code, 0, called.stderr);
    assert.deepEqual(JSON.parse(called.stdout), JSON.parse(rate.stdout));
    const todos = await sh(
      corral,
      ["harness", join(plugins, "find_todos.ts"), "src", "--json"],
      project,
      env,
    );
    const todosCalled = await sh(
      corral,
      ["-r", "call", "FindTodos", "--args", '{"path":"src"}'],
      project,
      env,
    );
    assert.equal(todosCalled.code, 0, todosCalled.stderr);
    assert.deepEqual(JSON.parse(todos.stdout), JSON.parse(todosCalled.stdout));

    // deno run of the file itself, once the folder has its deno.json (corral plugins init).
    const init = await sh(corral, ["plugins", "init"], project, env);
    assert.equal(init.code, 0, init.stderr);
    assert.match(init.stdout, new RegExp(`wrote ${join(plugins, "deno.json")}`));
    const alone = await sh(Deno.execPath(), ["run", "-A", "find_todos.ts", "--help"], plugins, env);
    assert.equal(alone.code, 0, alone.stderr);
    assert.match(alone.stdout, /^Usage: FindTodos \[path\]/);
    const aloneCall = await sh(
      Deno.execPath(),
      ["run", "-A", join(plugins, "find_todos.ts"), "src", "--json"],
      project,
      env,
    );
    assert.equal(aloneCall.code, 0, aloneCall.stderr);
    assert.deepEqual(JSON.parse(aloneCall.stdout), JSON.parse(todos.stdout));
    // The deno.json is no plugin and changes nothing corral loads.
    const list = await sh(corral, ["-r", "list", "--json"], project, env);
    const names = (JSON.parse(list.stdout) as Array<{ name: string | null; status: string }>)
      .filter((t) => t.status === "loaded").map((t) => t.name);
    assert.ok(names.includes("FindTodos") && names.includes("Rate"), list.stdout);

    // Not configured: the harness says so and exits 1, in both styles, as corral skips them.
    await Deno.writeTextFile(join(home, ".config", "corral", "corral.json"), "{}");
    for (const [file, plugin] of [["find_todos.ts", "find_todos"], ["rates.ts", "rates"]]) {
      const refused = await sh(corral, ["harness", join(plugins, file), "--json"], project, env);
      assert.equal(refused.code, 1, refused.stdout + refused.stderr);
      assert.equal(JSON.parse(refused.stdout).success, false);
      assert.match(
        refused.stderr,
        new RegExp(
          `^Error: ${plugin} is not configured \\(is_configured\\(\\) returned false\\); ` +
            `TOOL_SETUP got \\{\\} \\(corral\\.json has no services\\.${plugin}\\)`,
        ),
      );
    }
    const skipped = await sh(corral, ["-r", "list"], project, env);
    assert.match(
      skipped.stdout,
      /did not load: .*rates\.ts: not configured \(is_configured\(\) returned false\)/,
    );
    const notRun = await sh(Deno.execPath(), ["run", "-A", "rates.ts"], plugins, env);
    assert.equal(notRun.code, 0, "a module without a harness line does nothing when run alone");
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});
