// A compiled filter is built once, kept in corral's cache and used again only
// while its bytes are the ones proven; a changed one is built again, or,
// where it cannot be, the wall is missing with its cause (fail closed).
import assert from "node:assert/strict";
import { join } from "node:path";
import { jailFilter, SeccompMissingError } from "./second_wall.ts";
import { SecondWall } from "./wall.ts";

const NO_PYTHON = "/nonexistent/python3";

Deno.test("a filter is built once, then used from the cache while its bytes are the ones proven", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const f = await jailFilter([], { dir });
    assert.equal(f.files.length, 2);
    assert.equal(f.userns, false);
    for (const file of f.files) assert.ok(Deno.statSync(file).size > 0, file);
    // Another Python that does not exist: the kept filter is used, nothing is built.
    const again = await jailFilter([], { dir, python: NO_PYTHON });
    assert.deepEqual(again.files, f.files);
    // One byte changed: not used; it cannot be built again here, so the wall is missing.
    const bytes = Deno.readFileSync(f.files[1]);
    bytes[bytes.length - 1] ^= 1;
    Deno.writeFileSync(f.files[1], bytes);
    await assert.rejects(
      jailFilter([], { dir, python: `${NO_PYTHON}2` }),
      (e: Error) => e instanceof SeccompMissingError && e.message.includes(`${NO_PYTHON}2`),
    );
    // With libseccomp at hand, it is built again.
    // (Another spelling of the same Python: this process made the first filter with it.)
    await jailFilter([], { dir, python: "/usr/bin/../bin/python3" });
    assert.notDeepEqual(Deno.readFileSync(f.files[1]), bytes);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a Python without libseccomp's binding is named, and the fix with it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // A program that runs but is no Python with the binding.
    await assert.rejects(
      jailFilter([], { dir, python: "/bin/false" }),
      (e: Error) =>
        e instanceof SeccompMissingError && /apt-get install python3-seccomp/.test(e.message),
    );
    await assert.rejects(jailFilter(["nosuchcall"], { dir }), /no rule refuses nosuchcall/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("each policy's second wall: on with its grants, off by choice, missing with cause and opt-out", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const wall = await SecondWall.open([["unshare"], ["ptrace", "io_uring_setup"]], { dir });
    const on = wall.status({ where: "toolsets.system" });
    assert.equal(on.state, "on");
    const granted = wall.status({
      where: "servers.b",
      allow_syscalls: ["io_uring_setup", "ptrace"],
    });
    assert.ok(granted.state === "on" && granted.filter.except.join() === "io_uring_setup,ptrace");
    const userns = wall.status({ where: "servers.a", allow_syscalls: ["unshare"] });
    assert.ok(userns.state === "on" && userns.filter.userns);
    assert.equal(wall.status({ where: "x", seccomp: "off" }).state, "off");
    // A set that was not made when the registry opened is not guessed at.
    assert.equal(wall.status({ where: "x", allow_syscalls: ["bpf"] }).state, "missing");
    const none = await SecondWall.open([], { dir: join(dir, "other"), python: NO_PYTHON });
    const missing = none.status({ where: "toolsets.system", file: "/w/permissions.json" });
    assert.equal(missing.state, "missing");
    assert.match(
      missing.state === "missing" ? missing.why : "",
      new RegExp(`${NO_PYTHON}.*"seccomp": "off" in toolsets\\.system of /w/permissions\\.json`),
    );
    assert.match(none.missing ?? "", /cannot be run/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
