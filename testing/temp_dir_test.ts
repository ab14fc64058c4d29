// The helpers' temp folders go away: a real `deno test --parallel` of fixture test files (in a
// private temp folder) leaves none of them, failed tests and read-only caches included, while a
// folder made by hand stays (the control); and removal gets through a read-only Deno cache where
// a plain recursive remove cannot (as a user who is not root, for whom read-only holds).
import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "./paths.ts";
import { removeTree, tempDir, TEST_PREFIX } from "./temp_dir.ts";

const TESTDATA = new URL("./testdata/", import.meta.url).pathname;
const FILES = ["helpers_left.ts", "helper_failed.ts", "control_left.ts"]
  .map((f) => `${TESTDATA}${f}`);

/** What is in `dir` named `corral_test_*`, each name without its random tail. */
function _left(dir: string): string[] {
  return [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.startsWith(TEST_PREFIX))
    .map((n) => n.replace(/[^_]+$/, "")).sort();
}

Deno.test({
  name: "after `deno test --parallel`, no helper's temp folder is left; a folder made by hand is",
  // The child's own sandboxes and services end with it.
  sanitizeResources: false,
  fn: async () => {
    const tmp = await tempDir("corral_test_tmpdir_");
    const log = join(tmp, "made.log");
    assert.deepEqual(_left(tmp), []);
    const out = await new Deno.Command(Deno.execPath(), {
      // Not type-checked again here: `deno task check` checks testing/.
      args: ["test", "-A", "--no-check", "--parallel", "--config", `${ROOT}deno.json`, ...FILES],
      cwd: ROOT,
      env: { TMPDIR: tmp, CORRAL_TEST_TEMP_LOG: log, NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    // Every fixture test ran: the one that fails on purpose failed, the others passed.
    assert.equal(out.code, 1, text);
    assert.match(text, /FAILED \| 4 passed \| 1 failed/, text);
    assert.match(text, /a test that fails holding a helper's folder .*FAILED/, text);
    assert.deepEqual(_left(tmp), ["corral_test_control_"], text);
    // What .ci/run reads: every folder the helpers made (two layouts, a hosted layout, a
    // workspace and its cache, the CLI's folder, Redis's, a test's own), each gone.
    const made = (await Deno.readTextFile(log)).trim().split("\n");
    assert.equal(made.length, 8, made.join("\n"));
    for (const dir of made) {
      assert.ok(dir.startsWith(`${tmp}/corral_test_`), dir);
      assert.throws(() => Deno.lstatSync(dir), Deno.errors.NotFound, dir);
    }
  },
});

Deno.test("removeTree removes a read-only Deno cache that a plain recursive remove cannot", async () => {
  assert.equal(Deno.uid(), 0, "this test switches to the user nobody: run it as root (.ci/run is)");
  await using home = await _nobodyHome();
  // nobody may not reach corral's checkout nor the deno that runs the suite (npx keeps it under
  // /root): both are copied into its home.
  const probe = join(home.dir, "probe.ts");
  await Deno.copyFile(`${ROOT}testing/temp_dir.ts`, join(home.dir, "temp_dir.ts"));
  const deno = join(home.dir, "deno");
  await Deno.copyFile(Deno.execPath(), deno);
  await Deno.chmod(deno, 0o755);
  await Deno.writeTextFile(
    probe,
    `import { removeTree } from "./temp_dir.ts";
const dir = Deno.makeTempDirSync({ prefix: "corral_test_ro_" });
const pkg = dir + "/cache/npm/registry.npmjs.org/zod";
Deno.mkdirSync(pkg, { recursive: true });
Deno.writeTextFileSync(pkg + "/index.js", "export {};");
Deno.chmodSync(pkg + "/index.js", 0o444);
for (const p of [pkg, dir + "/cache/npm/registry.npmjs.org", dir + "/cache/npm", dir + "/cache"]) {
  Deno.chmodSync(p, 0o555);
}
let plain = "removed";
try { Deno.removeSync(dir, { recursive: true }); } catch (e) { plain = (e as Error).name; }
removeTree(dir);
console.log(JSON.stringify({ plain, left: [...Deno.readDirSync(Deno.env.get("TMPDIR")!)].length }));
`,
  );
  const out = await new Deno.Command("setpriv", {
    args: [
      ...["--reuid=65534", "--regid=65534", "--clear-groups", "--"],
      ...[deno, "run", "-A", "--no-config", probe],
    ],
    env: { HOME: home.dir, DENO_DIR: join(home.dir, "deno_dir"), TMPDIR: home.tmp, NO_COLOR: "1" },
    cwd: home.dir,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const err = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, err);
  const got = JSON.parse(new TextDecoder().decode(out.stdout).trim());
  // The control: the tree is read-only for this user; then removeTree removed it all the same.
  assert.deepEqual(got, { plain: "PermissionDenied", left: 0 }, err);
});

Deno.test("removeTree of a link removes the link, not what it leads to; a path already gone is no error", async () => {
  const dir = await tempDir();
  const target = join(dir, "target");
  await Deno.mkdir(join(target, "inner"), { recursive: true });
  await Deno.chmod(target, 0o555);
  await Deno.symlink(target, join(dir, "link"));
  removeTree(join(dir, "link"));
  assert.ok(Deno.statSync(join(target, "inner")).isDirectory, "the link's target is untouched");
  assert.equal(Deno.statSync(target).mode! & 0o777, 0o555, "and its mode too");
  assert.throws(() => Deno.lstatSync(join(dir, "link")), Deno.errors.NotFound);
  removeTree(join(dir, "link"));
  removeTree(dir);
  assert.throws(() => Deno.lstatSync(dir), Deno.errors.NotFound);
});

/** A home and a temp folder owned by the user nobody, removed on dispose. */
async function _nobodyHome() {
  const dir = await tempDir("corral_test_nobody_");
  const tmp = join(dir, "tmp");
  await Deno.mkdir(tmp);
  await Deno.chmod(dir, 0o755);
  for (const p of [dir, tmp]) await Deno.chown(p, 65534, 65534);
  return { dir, tmp, [Symbol.asyncDispose]: () => Promise.resolve(removeTree(dir)) };
}
