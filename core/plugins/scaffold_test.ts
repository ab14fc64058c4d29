// Tests of `corral new`: the generated tool passes `corral check` (loaded in
// its sandbox like any plugin) and its generated test passes, in both styles,
// from a folder outside the repo.
import assert from "node:assert/strict";
import { checkPlugins } from "./check.ts";
import { parsePolicy } from "../config/policy.ts";
import { policyHint, scaffoldTool, snakeCase } from "./scaffold.ts";
import { main } from "../../main.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

async function runDenoTest(file: string, cwd: string): Promise<{ ok: boolean; out: string }> {
  const res = await new Deno.Command(Deno.execPath(), {
    args: ["test", "--allow-read", "--allow-write", `--config=${ROOT}deno.json`, "--no-lock", file],
    cwd,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const dec = new TextDecoder();
  return { ok: res.success, out: dec.decode(res.stdout) + dec.decode(res.stderr) };
}

Deno.test("corral new writes tools of both styles that pass corral check and whose tests pass", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_new_" }));
  try {
    const made = [
      await scaffoldTool({ name: "LineCount", permissions: "r", dir, style: "class" }),
      await scaffoldTool({ name: "EchoBack", dir, style: "module" }),
      await scaffoldTool({ name: "LineCountModule", permissions: "r", dir, style: "module" }),
      await scaffoldTool({ name: "EchoClass", dir, style: "class" }),
    ];
    assert.deepEqual(made.map((m) => m.stem), [
      "line_count",
      "echo_back",
      "line_count_module",
      "echo_class",
    ]);
    assert.equal(made[0].file, `${dir}/line_count.ts`);
    assert.equal(made[0].test, `${dir}/line_count_test.ts`);
    // One import specifier for corral's API, wherever the file is.
    assert.ok((await Deno.readTextFile(made[0].file)).includes(`from "@corral/corral"`));
    assert.ok((await Deno.readTextFile(made[0].test)).includes(`from "@corral/corral/testing"`));

    // Plugins get nothing by default: the `r` tools need the policy entry the hint prints.
    const policy = parsePolicy(
      `{"plugins": {${policyHint("line_count", "r")!.replace(/^"plugins": \{|\}$/g, "")}, ` +
        `${policyHint("line_count_module", "r")!.replace(/^"plugins": \{|\}$/g, "")}}}`,
      "p.json",
      dir,
    );
    const report = await checkPlugins([dir], { workspace: dir, policy, builtins: false });
    assert.deepEqual(report.issues, []);
    assert.deepEqual(report.passed.map((p) => p.name).sort(), [
      "EchoBack",
      "EchoClass",
      "LineCount",
      "LineCountModule",
    ]);
    const strict = await checkPlugins([made[0].file], {
      workspace: dir,
      builtins: false,
      policy: parsePolicy("{}", "p.json", dir),
    });
    assert.match(strict.issues.map((i) => i.message).join(), /declares "r"/);

    const tests = await runDenoTest(".", dir);
    assert.ok(tests.ok, tests.out);
    assert.match(tests.out, /4 passed/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("corral new refuses bad names, bad letters, bad styles and existing files", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_new_" }));
  try {
    await assert.rejects(scaffoldTool({ name: "bad name", dir }), /does not match/);
    await assert.rejects(
      scaffoldTool({ name: "Ok", permissions: "rz", dir }),
      /unknown permission letter "z"/,
    );
    await assert.rejects(
      scaffoldTool({ name: "Ok", dir, style: "fancy" as "class" }),
      /--style must be class or module/,
    );
    await assert.rejects(scaffoldTool({ name: "get.url", dir }), /valid class name/);
    await scaffoldTool({ name: "Twice", dir });
    await assert.rejects(scaffoldTool({ name: "Twice", dir }), /already exists/);
    const code = await main([
      "new",
      "Cli",
      "--permissions",
      "rw",
      "--dir",
      dir,
      "--style",
      "module",
    ]);
    assert.equal(code, 0);
    const text = await Deno.readTextFile(`${dir}/cli.ts`);
    assert.match(text, /permissions: "rw"/);
    assert.equal(await main(["new", "bad name", "--dir", dir]), 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("snakeCase and policyHint", () => {
  assert.equal(snakeCase("WordCount"), "word_count");
  assert.equal(snakeCase("HTTPGet-v2"), "http_get_v2");
  assert.equal(snakeCase("get.url"), "get_url");
  assert.equal(policyHint("t", "rn"), '"plugins": { "t": { "read": ["."], "net": ["HOST"] } }');
});
