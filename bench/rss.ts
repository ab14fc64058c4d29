// The memory baseline: a Deno process that imports nothing prints its own RSS and peak (bytes).
const status = Deno.readTextFileSync("/proc/self/status");
const field = (name: string) =>
  Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1]) * 1024;
console.log(JSON.stringify({ rss: field("VmRSS"), hwm: field("VmHWM") }));
