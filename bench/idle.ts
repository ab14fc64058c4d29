// The live memory baseline: `deno run` of a script that imports nothing, says it is up (one
// newline on stdout), then stays alive until its stdin ends, so that its RSS can be read from
// /proc/<pid>/status while it runs, as a process sandbox's is.
Deno.stdout.writeSync(new Uint8Array([10]));
await Deno.stdin.read(new Uint8Array(1));
