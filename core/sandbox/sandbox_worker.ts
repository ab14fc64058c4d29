/**
 * Entry point of every sandbox worker (worker isolation, and the process
 * sandbox of a compiled corral binary): the sandbox runtime
 * (./sandbox_runtime.ts) with `postMessage` as its channel. The channel is
 * kept in a closure and taken away from tool code: whatever a tool posts
 * itself is refused, so it cannot forge a result for another call, and it
 * cannot close the worker.
 *
 * @module
 */
/// <reference lib="deno.worker" />
import type { HostMessage, SandboxMessage } from "./protocol.ts";
import { runSandbox } from "./sandbox_runtime.ts";

const _postMessage = self.postMessage.bind(self);
const _post = (msg: SandboxMessage) => _postMessage(msg);
const _forbidden = () => {
  throw new Error("postMessage and close are not available to tool code in a corral sandbox");
};
for (const target of [self, Object.getPrototypeOf(self), DedicatedWorkerGlobalScope.prototype]) {
  for (const key of ["postMessage", "close"]) {
    try {
      Object.defineProperty(target, key, {
        value: _forbidden,
        writable: false,
        configurable: false,
      });
    } catch { /* already locked */ }
  }
}
const _onHost = runSandbox(_post);
self.onmessage = (e: MessageEvent<HostMessage>) => void _onHost(e.data);
_post({ type: "ready" });
