// Tests of `corral check`: each contract breach is caught, per tool; clean
// files pass; the CLI exits 1 when anything fails.
import assert from "node:assert/strict";
import { checkPlugins, formatCheckReport } from "./check.ts";
import { parsePolicy } from "../config/policy.ts";
import { main } from "../../main.ts";

const FIX = new URL("../../tests/fixtures/plugins/", import.meta.url).pathname;
const ROOT = new URL("../..", import.meta.url).pathname;

Deno.test("check catches each contract breach and names the tool", async () => {
  const report = await checkPlugins([`${FIX}check/breaches.ts`], { builtins: false });
  assert.equal(report.ok, false);
  const of = (tool: string) => report.issues.filter((i) => i.tool === tool).map((i) => i.message);
  assert.match(of("NoDescription").join(), /description is missing or empty/);
  assert.match(of("EmptyDescription").join(), /description is missing or empty/);
  assert.match(of("bad name!").join(), /does not match/);
  assert.match(
    of("Dup").join(),
    /name is duplicated: defined twice in \S*breaches\.ts; the later definition is used/,
  );
  assert.match(of("StringSchema").join(), /input schema must be a zod object/);
  assert.match(of("OddLetters").join(), /unknown permission letter "q"/);
  assert.match(
    of("WantsWrite").join(),
    /declares "w" \(write\) but plugins\.default grants no write; add "write": .* in \S*permissions\.json/,
  );
  assert.deepEqual(report.passed.map((p) => p.name), ["Fine"]);
  const text = formatCheckReport(report, ROOT);
  assert.match(text, /tests\/fixtures\/plugins\/check\/breaches\.ts/);
  assert.match(text, /ok +Fine/);
  assert.match(text, /FAIL +WantsWrite: declares "w"/);
});

Deno.test("check passes letters the policy grants, and clean files of both styles", async () => {
  const ws = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_check_ws_" }));
  const policy = parsePolicy(
    JSON.stringify({ plugins: { breaches: { write: ["."] } } }),
    "p.json",
    ws,
  );
  const report = await checkPlugins([
    `${FIX}check/breaches.ts`,
    `${FIX}check/clean.ts`,
    `${ROOT}plugins`,
  ], {
    builtins: false,
    policy,
    workspace: ws,
  });
  assert.ok(!report.issues.some((i) => i.tool === "WantsWrite"));
  assert.ok(report.passed.some((p) => p.name === "WantsWrite"));
  for (const name of ["Shout", "ChangeCase", "Slugify", "RollDice", "Greet"]) {
    assert.ok(report.passed.some((p) => p.name === name), name);
  }
  assert.ok(
    !report.issues.some((i) => i.file.startsWith(`${ROOT}plugins/`) || i.file.endsWith("clean.ts")),
  );
});

Deno.test("check reports a module that fails to import, a duplicate of a built-in, and files that are not plugins", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_check_" }));
  const ws = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_check_ws_" }));
  try {
    await Deno.writeTextFile(`${dir}/broken.ts`, "export const = ;\n");
    await Deno.writeTextFile(`${dir}/_helper.ts`, "export {};\n");
    const report = await checkPlugins(
      [`${dir}/broken.ts`, `${dir}/_helper.ts`, `${dir}/missing.ts`, `${FIX}collide/read_file.ts`],
      { workspace: ws, cacheDir: null },
    );
    const messages = (file: string) =>
      report.issues.filter((i) => i.file === file).map((i) => i.message).join("\n");
    assert.match(messages(`${dir}/broken.ts`), /import failed/);
    assert.match(messages(`${dir}/_helper.ts`), /not a plugin file/);
    assert.match(messages(`${dir}/missing.ts`), /cannot read it/);
    assert.match(
      messages(`${FIX}collide/read_file.ts`),
      /the built-in toolset "files" has a tool "ReadFile"/,
    );
    assert.equal(report.ok, false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("corral check exits 1 when anything fails and 0 when all passes", async () => {
  const log = console.log;
  const out: string[] = [];
  console.log = (...a: unknown[]) => out.push(a.join(" "));
  try {
    const ws = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_check_ws_" }));
    const w = ["--workspace", ws];
    assert.equal(await main(["check", ...w, `${FIX}check/breaches.ts`]), 1);
    assert.equal(
      await main(["check", ...w, `${ROOT}plugins/text_tools.ts`, `${FIX}check/clean.ts`]),
      0,
    );
    assert.equal(await main(["check", ...w]), 2);
  } finally {
    console.log = log;
  }
  assert.match(out.join("\n"), /all checks passed/);
});
