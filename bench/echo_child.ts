// The bare child-process baseline: echo every stdin line to stdout as it arrives.
const enc = new TextEncoder();
const dec = new TextDecoder();
let buf = "";
for await (const chunk of Deno.stdin.readable) {
  buf += dec.decode(chunk, { stream: true });
  const nl = buf.lastIndexOf("\n");
  if (nl < 0) continue;
  let bytes = enc.encode(buf.slice(0, nl + 1));
  buf = buf.slice(nl + 1);
  while (bytes.length) bytes = bytes.subarray(Deno.stdout.writeSync(bytes));
}
