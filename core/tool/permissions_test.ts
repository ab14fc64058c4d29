import assert from "node:assert/strict";
import {
  LETTER_FLAGS,
  LETTER_NAMES,
  LETTERS,
  missingLetters,
  parsePermissions,
} from "./permissions.ts";

Deno.test("parsePermissions puts letters in canonical r, w, x, n order", () => {
  assert.equal(parsePermissions("wr", "T"), "rw");
  assert.equal(parsePermissions("nxwr", "T"), "rwxn");
  assert.equal(parsePermissions("nr", "T"), "rn");
});

Deno.test("parsePermissions drops repeated letters", () => {
  assert.equal(parsePermissions("rrw", "T"), "rw");
});

Deno.test("parsePermissions treats undefined, null and an empty string as no letters", () => {
  assert.equal(parsePermissions(undefined, "T"), "");
  assert.equal(parsePermissions(null, "T"), "");
  assert.equal(parsePermissions("", "T"), "");
});

Deno.test("parsePermissions refuses an unknown letter, naming the tool and the letter", () => {
  assert.throws(
    () => parsePermissions("rq", "ReadFile"),
    (err: Error) =>
      err instanceof TypeError &&
      err.message ===
        'Tool "ReadFile": unknown permission letter "q" in "rq" (allowed: r, w, x, n)',
  );
});

Deno.test("parsePermissions refuses upper-case letters and separators", () => {
  for (const bad of ["R", "r,w", "r w"]) {
    assert.throws(() => parsePermissions(bad, "T"), TypeError, bad);
  }
});

Deno.test("parsePermissions refuses a value that is not a string, naming its type", () => {
  assert.throws(
    () => parsePermissions(["r"], "T"),
    (err: Error) =>
      err instanceof TypeError && err.message.includes('Tool "T"') &&
      err.message.includes("got object"),
  );
});

Deno.test("missingLetters lists the letters of a that b lacks, in canonical order", () => {
  assert.equal(missingLetters("nxwr", "r"), "wxn");
  assert.equal(missingLetters("rw", "rwxn"), "");
  assert.equal(missingLetters("", "r"), "");
});

Deno.test("every letter has a name and a Deno flag", () => {
  assert.deepEqual([...LETTERS], ["r", "w", "x", "n"]);
  assert.deepEqual(LETTER_NAMES, { r: "read", w: "write", x: "run", n: "net" });
  assert.deepEqual(LETTER_FLAGS, {
    r: "--allow-read",
    w: "--allow-write",
    x: "--allow-run",
    n: "--allow-net",
  });
});
