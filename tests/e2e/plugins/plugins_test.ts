// End-to-end tests of plugins: file-drop directories and packages, loaded
// in their own sandboxes. Fixture plugins live in tests/fixtures/plugins/;
// each test copies what it needs into a temp folder OUTSIDE the repo (so the
// zod imports are proven from outside), and makes broken files and symlinks
// at run time. One registry load covers several assertions.
import assert from "node:assert/strict";
import { join } from "node:path";
import { parsePolicy } from "../../../core/config/policy.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { loadConfig } from "../../../core/config/corral_config.ts";
import { loadPluginDir, loadPlugins } from "../../../core/plugins/_load_plugins.ts";
import { pluginSources, TOOL_DIRS_ENV } from "../../../core/plugins/plugins.ts";
import { scanPluginDir } from "../../../core/plugins/plugin_files.ts";
import { VALID_EXPORT_EXAMPLE } from "../../../core/tool/tool.ts";
import { FIXTURES, ROOT } from "../../../testing/mod.ts";
import { runCli } from "../../_helpers.ts";
import { checkPlugins } from "../../../core/plugins/check.ts";

const PLUGIN_FIXTURES = `${FIXTURES}plugins`;
const SHIPPED_POLICY = JSON.parse(await Deno.readTextFile(`${ROOT}permissions.json`));

async function tempBase(): Promise<string> {
  return await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_plugins_" }));
}

async function copyDir(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.isFile) await Deno.copyFile(join(from, e.name), join(to, e.name));
  }
}

function capture(): { reporter: Reporter; lines: string[] } {
  const lines: string[] = [];
  return { reporter: new Reporter({ sink: (t) => lines.push(t), color: false }), lines };
}

Deno.test("file-drop and package plugins load in order, each alone in its sandbox", async (t) => {
  const base = await tempBase();
  assert.ok(!base.startsWith(ROOT), "the plugins live outside the repo");
  await copyDir(`${PLUGIN_FIXTURES}/mixed`, `${base}/mixed`);
  await copyDir(`${PLUGIN_FIXTURES}/other`, `${base}/other`);
  await copyDir(`${PLUGIN_FIXTURES}/package`, `${base}/pkg`);
  await Deno.writeTextFile(
    `${base}/mixed/broken_syntax.ts`,
    'export const TOOL_CONFIGS = [{ name: "B",\n',
  );
  await Deno.writeTextFile(`${base}/secret.txt`, "top secret");
  await Deno.mkdir(`${base}/markers`);
  await Deno.writeTextFile(
    `${base}/corral.json`,
    JSON.stringify({
      tool_dirs: ["mixed"],
      plugins: ["./pkg/mod.ts"],
      services: {
        setup_recorder: { city: "Oslo" },
        alpha: { secret: "not for setup_recorder" },
        pkg: { greeting: "Howdy" },
      },
    }),
  );
  const policy = parsePolicy(
    JSON.stringify({
      plugins: {
        default: { isolation: "process" },
        slow_import: { timeout_ms: 1000 },
        confirm_marker: { write: ["markers"] },
      },
    }),
    "test-permissions.json",
    base,
  );
  // CORRAL_TOOL_DIRS's value, given (never set here: test files share this process's environment).
  const config = await loadConfig({ workspace: base, file: `${base}/corral.json` });
  const found = await pluginSources({
    policy,
    config,
    workspace: base,
    defaultDir: null,
    envDirs: `${base}/other:${base}/does-not-exist`,
  });
  const { reporter, lines } = capture();
  const registry = await Registry.create({
    workspace: base,
    policy,
    noBuiltins: true,
    cacheDir: null,
    reporter,
    sources: found.sources,
  });
  try {
    await t.step("config tool_dirs, then CORRAL_TOOL_DIRS, then packages; files sorted", () => {
      assert.deepEqual(found.sources.map((s) => s.id), [
        "plugin:mixed/alpha",
        "plugin:mixed/broken_syntax",
        "plugin:mixed/confirm_marker",
        "plugin:mixed/missing_export",
        "plugin:mixed/not_configured",
        "plugin:mixed/reads_outside",
        "plugin:mixed/setup_recorder",
        "plugin:mixed/slow_import",
        "plugin:mixed/top_throw",
        "plugin:mixed/zod_bare",
        "plugin:mixed/zod_npm",
        "plugin:other/alpha",
        "package:./pkg/mod.ts",
      ]);
      assert.equal(
        found.dirs.map((d) => d.origin).join(),
        `${base}/corral.json tool_dirs,${TOOL_DIRS_ENV}`,
      );
      assert.ok(
        found.warnings.some((w) => w.includes("does-not-exist") && w.includes(TOOL_DIRS_ENV)),
      );
      for (const s of found.sources) assert.equal(s.policy.isolation, "process", s.id);
    });

    await t.step("`_` helpers, `_test` files and non-modules are skipped", () => {
      const names = registry.list().map((x) => x.name);
      assert.ok(!names.includes("Helper") && !names.includes("AlphaTest"));
      assert.ok(!registry.problems.some((p) => /_helper|alpha_test|notes\.md/.test(p.source)));
    });

    await t.step("each broken plugin fails alone with a one-line reason naming its file", () => {
      const reason = (stem: string) => {
        const p = registry.problems.filter((x) => x.source.endsWith(`/${stem}.ts`));
        assert.equal(p.length, 1, `one problem for ${stem}: ${JSON.stringify(registry.problems)}`);
        assert.ok(!p[0].message.includes("\n"), `one line: ${p[0].message}`);
        assert.ok(p[0].message.includes(`${stem}.ts`), `names the file: ${p[0].message}`);
        return p[0].message;
      };
      assert.match(reason("broken_syntax"), /import failed: SyntaxError/);
      assert.ok(reason("missing_export").includes(VALID_EXPORT_EXAMPLE));
      assert.match(reason("top_throw"), /boom at top level/);
      assert.match(reason("reads_outside"), /permission denied at import: .*secret\.txt/);
      assert.match(reason("slow_import"), /timed out after 1000 ms/);
      assert.match(reason("not_configured"), /not configured/);
      assert.ok(
        lines.some((l) => l.startsWith("Warning: did not load: ") && l.includes("top_throw.ts")),
      );
      const loaded = registry.loaded().map((x) => x.name).sort();
      assert.deepEqual(loaded, [
        "Alpha",
        "PkgGreet",
        "SetupEcho",
        "WriteMarker",
        "ZodBare",
        "ZodNpm",
      ]);
      assert.ok(
        !registry.list().some((x) => ["LeakSecret", "NeverConfigured", "Slow"].includes(x.name)),
      );
    });

    await t.step(
      "two directories with the same file name do not clash; the later tool wins with a warning naming both",
      async () => {
        const alphas = registry.list().filter((x) => x.name === "Alpha");
        assert.deepEqual(alphas.map((x) => [x.toolset, x.status]), [
          ["plugin:mixed/alpha", "overridden"],
          ["plugin:other/alpha", "loaded"],
        ]);
        const warning = registry.warnings.find((w) => w.includes('"Alpha"'));
        assert.ok(
          warning?.includes("other/alpha.ts") && warning.includes("mixed/alpha.ts"),
          warning,
        );
        const res = await registry.call("Alpha", {});
        assert.equal(res.from, "other");
      },
    );

    await t.step("TOOL_SETUP receives only the plugin's own services section, once", async () => {
      const res = await registry.call("SetupEcho", {});
      assert.deepEqual(res.received, { city: "Oslo" });
      assert.equal(res.setup_calls, 1);
    });

    await t.step(
      "a package given as a local path with a default plugin object loads, with its section",
      async () => {
        const info = registry.get("PkgGreet");
        assert.equal(info?.kind, "package");
        assert.equal(info?.toolset, "package:./pkg/mod.ts");
        const res = await registry.call("PkgGreet", { who: "Ann" });
        assert.equal(res.text, "Howdy, Ann");
      },
    );

    await t.step(
      "zod imports both as `zod` and as `npm:zod@^3.25` from outside the repo",
      async () => {
        assert.equal((await registry.call("ZodBare", { n: 2 })).doubled, 4);
        assert.equal((await registry.call("ZodNpm", { n: 2 })).tripled, 6);
        const bad = await registry.call("ZodNpm", { n: "two" });
        assert.equal(bad.success, false);
      },
    );

    await t.step(
      "a tool that needs confirmation is refused without a confirmer and does not run",
      async () => {
        const res = await registry.call("WriteMarker", {});
        assert.equal(res.success, false);
        assert.match(String(res.error), /needs confirmation/);
        await assert.rejects(Deno.stat(`${base}/markers/marker.txt`), Deno.errors.NotFound);
      },
    );
  } finally {
    await registry.close();
    await Deno.remove(base, { recursive: true });
  }
});

Deno.test("symlinks: one escaping the plugin directory is rejected naming link and target; one inside is accepted", async () => {
  const base = await tempBase();
  try {
    await Deno.mkdir(`${base}/tools`);
    await Deno.mkdir(`${base}/outside`);
    const tool = (name: string) =>
      `export const TOOL_CONFIGS = [{ name: "${name}", description: "${name} tool", function: () => "${name}" }];\n`;
    await Deno.writeTextFile(`${base}/tools/_impl.ts`, tool("Linked"));
    await Deno.writeTextFile(`${base}/outside/evil.ts`, tool("Evil"));
    await Deno.writeTextFile(`${base}/outside/helper.ts`, "export const x = 1;\n");
    await Deno.writeTextFile(
      `${base}/tools/uses_lib.ts`,
      `import { x } from "./libdir/helper.ts";\n${tool("UsesLib")}export { x };\n`,
    );
    await Deno.symlink(`${base}/tools/_impl.ts`, `${base}/tools/linked.ts`);
    await Deno.symlink(`${base}/outside/evil.ts`, `${base}/tools/escape.ts`);
    await Deno.symlink(`${base}/outside`, `${base}/tools/libdir`);
    await Deno.symlink(`${base}/tools`, `${base}/dirlink`);

    const scan = await scanPluginDir(`${base}/tools`);
    assert.deepEqual(scan.entries.map((e) => e.stem), ["linked"]);
    const escape = scan.rejected.find((r) => r.includes("escape.ts"));
    assert.ok(
      escape?.includes(`${base}/tools/escape.ts`) && escape.includes(`${base}/outside/evil.ts`),
      escape,
    );
    const viaDir = scan.rejected.find((r) => r.includes("uses_lib.ts"));
    assert.ok(
      viaDir?.includes(`${base}/tools/libdir/helper.ts -> ${base}/outside/helper.ts`),
      viaDir,
    );

    // A declared directory that is itself a symlink is resolved once: fine.
    const { tools, warnings } = await loadPluginDir(`${base}/dirlink`, { workspace: base });
    assert.deepEqual(tools.map((x) => [x.name, x.status]), [["Linked", "loaded"]]);
    assert.equal(warnings.length, 2);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});

Deno.test("discovery cache: a second start imports nothing; a changed file is imported again", async () => {
  const base = await tempBase();
  try {
    await Deno.mkdir(`${base}/tools`);
    const write = (name: string, desc: string) =>
      Deno.writeTextFile(
        `${base}/tools/${name.toLowerCase()}.ts`,
        `export const TOOL_CONFIGS = [{ name: "${name}", description: "${desc}", function: () => "x" }];\n`,
      );
    await write("One", "first");
    await write("Two", "second");
    const load = async () => {
      const { registry } = await loadPlugins({
        dirs: [`${base}/tools`],
        workspace: base,
        cacheDir: `${base}/cache`,
        reporter: new Reporter({ quiet: true }),
      });
      await registry.close();
      return registry;
    };
    const first = await load();
    assert.equal(first.imports, 2);
    const second = await load();
    assert.equal(second.imports, 0);
    assert.deepEqual(second.loaded().map((x) => x.name), ["One", "Two"]);
    await write("One", "changed");
    const third = await load();
    assert.equal(third.imports, 1);
    assert.equal(third.get("One")?.description, "changed");
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});

Deno.test("a plugin may not replace a built-in tool unless its policy allows_override", async () => {
  const base = await tempBase();
  try {
    const load = async (plugins: Record<string, unknown>) => {
      const policy = parsePolicy(
        JSON.stringify({ ...SHIPPED_POLICY, plugins }),
        "test-permissions.json",
        base,
      );
      const { sources } = await pluginSources({
        policy,
        config: {
          ...(await loadConfig({ workspace: base })),
          toolDirs: [`${PLUGIN_FIXTURES}/collide`],
        },
        envDirs: null,
        defaultDir: null,
        workspace: base,
      });
      const registry = await Registry.create({
        workspace: base,
        policy,
        privileges: "r",
        sources,
        cacheDir: `${base}/cache`,
        reporter: new Reporter({ quiet: true }),
      });
      await registry.close();
      return registry;
    };
    const refused = await load({ default: {} });
    const both = refused.list().filter((x) => x.name === "ReadFile");
    assert.deepEqual(both.map((x) => [x.kind, x.status]), [["builtin", "loaded"], [
      "plugin",
      "dropped",
    ]]);
    assert.equal(refused.get("ReadFile")?.kind, "builtin");
    const warning = refused.warnings.find((w) => w.includes('"ReadFile"'));
    assert.ok(warning?.includes("toolsets/files/read_file.ts"), warning);
    assert.ok(warning?.includes("collide/read_file.ts"), warning);
    assert.match(warning!, /allow_override/);

    const allowed = await load({ default: {}, read_file: { allow_override: true } });
    const again = allowed.list().filter((x) => x.name === "ReadFile");
    assert.deepEqual(again.map((x) => [x.kind, x.status]), [["builtin", "overridden"], [
      "plugin",
      "loaded",
    ]]);
    assert.equal(allowed.get("ReadFile")?.toolset, "plugin:collide/read_file");
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});

Deno.test("confirmation: `corral call` without a terminal refuses and does not run; --yes runs; policy always/never", async (t) => {
  const base = await tempBase();
  try {
    await Deno.mkdir(`${base}/tools`);
    await Deno.mkdir(`${base}/markers`);
    await Deno.copyFile(
      `${PLUGIN_FIXTURES}/mixed/confirm_marker.ts`,
      `${base}/tools/confirm_marker.ts`,
    );
    await Deno.writeTextFile(
      `${base}/corral.json`,
      JSON.stringify({ tool_dirs: ["tools"], default_plugin_dir: false }),
    );
    const policy = (confirm?: string) => ({
      plugins: { confirm_marker: { write: ["markers"] } },
      ...(confirm ? { tools: { WriteMarker: { confirm } } } : {}),
    });
    await Deno.writeTextFile(`${base}/permissions.json`, JSON.stringify(policy()));
    const marker = `${base}/markers/marker.txt`;
    const cli = (...extra: string[]) =>
      runCli([
        "call",
        "WriteMarker",
        "--args",
        "{}",
        "-w",
        "--permissions",
        `${base}/permissions.json`,
        "--config",
        `${base}/corral.json`,
        ...extra,
      ], {
        cwd: base,
        flags: ["-A", `--config=${ROOT}deno.json`],
        env: { CORRAL_CACHE_DIR: `${base}/cache`, [TOOL_DIRS_ENV]: "" },
      });

    await t.step(
      "no terminal, no --yes: refused with a clear error, the tool did not run",
      async () => {
        const res = await cli();
        assert.equal(res.code, 1, res.stderr);
        assert.match(res.stdout, /needs confirmation: approve it \(corral call --yes\)/);
        await assert.rejects(Deno.stat(marker), Deno.errors.NotFound);
      },
    );

    await t.step("--yes approves the call", async () => {
      const res = await cli("--yes");
      assert.equal(res.code, 0, res.stdout + res.stderr);
      assert.equal(await Deno.readTextFile(marker), "written");
      await Deno.remove(marker);
    });

    const registryWith = async (confirm: string) => {
      const p = parsePolicy(JSON.stringify(policy(confirm)), "test-permissions.json", base);
      return await loadPlugins({
        dirs: [`${base}/tools`],
        workspace: base,
        policy: p,
        reporter: new Reporter({ quiet: true }),
      });
    };

    await t.step('policy "never" refuses even when a person would say yes', async () => {
      const { registry } = await registryWith("never");
      try {
        const res = await registry.call("WriteMarker", {}, { confirm: () => true });
        assert.equal(res.success, false);
        assert.match(String(res.error), /refused by policy/);
        await assert.rejects(Deno.stat(marker), Deno.errors.NotFound);
      } finally {
        await registry.close();
      }
    });

    await t.step('policy "always" runs without asking', async () => {
      const { registry } = await registryWith("always");
      try {
        let asked = false;
        const res = await registry.call("WriteMarker", {}, { confirm: () => (asked = true) });
        assert.equal(res.success, true, res.error);
        assert.equal(asked, false);
        assert.equal(await Deno.readTextFile(marker), "written");
      } finally {
        await registry.close();
      }
    });
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});

Deno.test("corral list --config: shows a rejected plugin and a broken one; the shipped examples load", async () => {
  const base = await tempBase();
  try {
    await Deno.mkdir(`${base}/tools`);
    await Deno.writeTextFile(`${base}/tools/broken.ts`, "export const = ;\n");
    await Deno.writeTextFile(`${base}/evil.ts`, "export const TOOL_CONFIGS = [];\n");
    await Deno.symlink(`${base}/evil.ts`, `${base}/tools/evil.ts`);
    const res = await runCli(["list", "-r", "--config", `${base}/corral.json`], {
      cwd: base,
      flags: ["-A", `--config=${ROOT}deno.json`],
      env: { CORRAL_CACHE_DIR: "", [TOOL_DIRS_ENV]: `${base}/tools` },
    }).catch((e) => ({ code: -1, stdout: "", stderr: String(e) }));
    // --config names a missing file: a configuration error, exit 2, naming it.
    assert.equal(res.code, 2);
    assert.match(res.stderr, /corral\.json/);

    // --config PATH: its tool_dirs resolve against the config file's folder.
    await Deno.mkdir(`${base}/conf`);
    await Deno.writeTextFile(`${base}/conf/my.json`, JSON.stringify({ tool_dirs: ["../tools"] }));
    // corral's examples load where the user names their folder.
    const ok = await runCli(["list", "-r", "--config", "conf/my.json"], {
      cwd: base,
      flags: ["-A", `--config=${ROOT}deno.json`],
      env: { CORRAL_CACHE_DIR: "", [TOOL_DIRS_ENV]: `${ROOT}plugins` },
    });
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /did not load: .*broken\.ts: import failed/);
    assert.match(
      ok.stdout,
      /did not load: rejected .*tools\/evil\.ts: it is a symlink to .*\/evil\.ts/,
    );
    for (const name of ["ChangeCase", "Slugify", "RollDice", "Greet"]) {
      assert.match(ok.stdout, new RegExp(`${name} +plugin:plugins/\\w+ .*loaded`));
    }
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});

Deno.test("the worked example of docs/AUTHORING.md passes corral check and its own test", async () => {
  const doc = await Deno.readTextFile(`${ROOT}docs/AUTHORING.md`);
  const block = (first: string) => {
    const m = doc.match(
      new RegExp("```ts\\n(// " + first.replaceAll(".", "\\.") + "\\n[\\s\\S]*?)```"),
    );
    assert.ok(m, `docs/AUTHORING.md has a block starting with // ${first}`);
    return m[1].replaceAll('"../core/', `"${ROOT}core/`);
  };
  const base = await tempBase();
  try {
    await Deno.mkdir(`${base}/plugins`);
    await Deno.writeTextFile(`${base}/plugins/count_todos.ts`, block("plugins/count_todos.ts"));
    await Deno.writeTextFile(
      `${base}/plugins/count_todos_test.ts`,
      block("plugins/count_todos_test.ts"),
    );
    const policy = parsePolicy(
      '{ "plugins": { "count_todos": { "read": ["."] } } }',
      "p.json",
      base,
    );
    const report = await checkPlugins([`${base}/plugins`], {
      workspace: base,
      policy,
      builtins: false,
    });
    assert.deepEqual(report.issues, []);
    assert.deepEqual(report.passed.map((p) => p.name), ["CountTodos"]);
    const res = await new Deno.Command(Deno.execPath(), {
      args: [
        "test",
        "--allow-read",
        "--allow-write",
        `--config=${ROOT}deno.json`,
        "--no-lock",
        "plugins",
      ],
      cwd: base,
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    const out = new TextDecoder().decode(res.stdout) + new TextDecoder().decode(res.stderr);
    assert.ok(res.success, out);
    assert.match(out, /1 passed/);
    // And through the sandbox, with the grant the doc gives it.
    await Deno.writeTextFile(`${base}/notes.txt`, "TODO a\nFIXME b\n");
    const { registry } = await loadPlugins({ dirs: [`${base}/plugins`], workspace: base, policy });
    try {
      const call = await registry.call("CountTodos", { filepath: "notes.txt" });
      assert.deepEqual(call.counts, { TODO: 1, FIXME: 1 });
    } finally {
      await registry.close();
    }
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});
