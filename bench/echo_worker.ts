/// <reference lib="deno.worker" />
// The bare Web Worker baseline: post every message straight back.
self.onmessage = (e: MessageEvent) => self.postMessage(e.data);
