/**
 * What the host and the applier process (./tree_applier.ts, started by
 * ./_root_applier.ts) say to each other: one JSON request per line on the
 * applier's stdin (`{ id, ops: [{ op, rel, from?, mode?, keep?, size?,
 * expect? }], durable? }`), one JSON answer per line on its stdout
 * (`{ id, results: [{ ok, error?, conflict?, sig? }] }`); the first line it
 * writes is `{ ready: true, ino }`.
 *
 * @module
 */

/** What a path of the tree is (kind, inode, size, modification time). */
export interface ApplierSig {
  kind: string;
  ino: number;
  size: number;
  mtimeMs: number;
}

/** One write, relative to the root. */
export interface ApplierOp {
  op: "write" | "dir" | "link" | "remove" | "prune";
  rel: string;
  /** The upper layer's file or link (absolute, in corral's layers folder). */
  from?: string;
  /** The permission bits it gets, exactly (`mode & 0o7777`): the host masked them. */
  mode?: number;
  /** For `prune`: the names the folder keeps. */
  keep?: string[];
  /** For `write`: the layer's file's size when walked (an empty new file needs no temporary). */
  size?: number;
  /** What the host saw at the path (null: nothing); anything else there is not replaced. */
  expect?: ApplierSig | null;
}

/** What one op did: the path's signature after it, or why it failed. */
export interface ApplierResult {
  ok: boolean;
  error?: string;
  /** The path held something else than `expect`: nothing was done. */
  conflict?: boolean;
  sig?: ApplierSig | null;
}

/** One request: a batch of operations, applied in order. */
export interface ApplierRequest {
  id: number;
  ops: ApplierOp[];
  /** Flush every file system written since the last durable request before answering. */
  durable?: boolean;
}
