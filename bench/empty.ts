// The cold-start baseline: `deno run` of a script that does nothing.
