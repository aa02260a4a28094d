/**
 * The two functions of the runtime's node:zlib the ledger shard's record codec uses (Node
 * compatibility is on by default at this Worker's compatibility date; see record-codec.ts).
 */
declare module 'node:zlib' {
  export function deflateRawSync(data: Uint8Array, options?: { level?: number }): Uint8Array;
  export function inflateRawSync(data: Uint8Array): Uint8Array;
}
