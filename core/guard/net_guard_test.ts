import assert from "node:assert/strict";
import { classifyAddress, guardUrl, listedExplicitly, NetworkGuardError } from "./net_guard.ts";

Deno.test("classifyAddress refuses every non-public IPv4 range named in the policy", () => {
  const cases: Array<[string, string]> = [
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "link-local"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["100.64.0.1", "private"],
    ["224.0.0.1", "multicast"],
    ["255.255.255.255", "reserved"],
  ];
  for (const [ip, kind] of cases) assert.equal(classifyAddress(ip), kind, ip);
});

Deno.test("classifyAddress keeps public IPv4 addresses next to the private ranges public", () => {
  for (
    const ip of [
      "8.8.8.8",
      "172.15.255.255",
      "172.32.0.1",
      "192.169.0.1",
      "169.253.1.1",
      "11.0.0.1",
    ]
  ) {
    assert.equal(classifyAddress(ip), "public", ip);
  }
});

Deno.test("classifyAddress sees through IPv6 forms of private addresses", () => {
  const cases: Array<[string, string]> = [
    ["::1", "loopback"],
    ["[::1]", "loopback"],
    ["0:0:0:0:0:0:0:1", "loopback"],
    ["::", "unspecified"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["fe80::1%eth0", "link-local"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::ffff:169.254.169.254", "link-local"],
    ["::ffff:10.0.0.1", "private"],
    ["::127.0.0.1", "loopback"],
    ["64:ff9b::a9fe:a9fe", "link-local"],
    ["2002:c0a8:0101::1", "private"],
    ["ff02::1", "multicast"],
  ];
  for (const [ip, kind] of cases) assert.equal(classifyAddress(ip), kind, ip);
  assert.equal(classifyAddress("2606:4700::1111"), "public");
  assert.equal(classifyAddress("::ffff:8.8.8.8"), "public");
});

Deno.test("classifyAddress calls malformed text invalid, never public", () => {
  for (const bad of ["", "1.2.3", "1.2.3.256", "::1::2", "example.com", "1:2:3:4:5:6:7:8:9"]) {
    assert.equal(classifyAddress(bad), "invalid", bad);
  }
});

Deno.test('listedExplicitly matches the host name or name:port, never through "*"', () => {
  const url = new URL("http://127.0.0.1:8080/x");
  assert.equal(listedExplicitly(url, ["127.0.0.1:8080"]), true);
  assert.equal(listedExplicitly(url, ["127.0.0.1"]), true);
  assert.equal(listedExplicitly(url, ["127.0.0.1:8081"]), false);
  assert.equal(listedExplicitly(url, ["*"]), false);
  assert.equal(listedExplicitly(new URL("https://Example.com/"), ["example.com:443"]), true);
});

Deno.test("guardUrl refuses a name whose DNS answer is private, after resolution", async () => {
  const resolve = (name: string) =>
    Promise.resolve(name === "evil.test" ? ["93.184.216.34", "10.0.0.7"] : ["93.184.216.34"]);
  await assert.rejects(
    guardUrl(new URL("http://evil.test/"), { allowed: ["*"], resolve }),
    (err: Error) => err instanceof NetworkGuardError && /evil\.test.*private/.test(err.message),
  );
  await guardUrl(new URL("http://good.test/"), { allowed: ["*"], resolve });
  // Listed explicitly: not even resolved.
  await guardUrl(new URL("http://evil.test/"), {
    allowed: ["evil.test"],
    resolve: () => Promise.reject(new Error("must not resolve")),
  });
});

Deno.test("guardUrl refuses IP literals without DNS", async () => {
  await assert.rejects(
    guardUrl(new URL("http://[::ffff:a9fe:a9fe]/"), { allowed: ["*"] }),
    NetworkGuardError,
  );
});
