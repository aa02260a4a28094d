/** Consumer of `binbatch-chunks`: one message = one chunk of a batch file (see services/batches/chunks.ts). */
import type { Env } from '../env';
import { redactDigits } from '../lib/redact';
import type { Clock } from '../lib/time';
import { chunkMessageSchema, type ChunkMessage } from '../schemas/queue';
import { processChunk } from '../services/batches/chunks';

/** Seconds before the n-th retry: 5, 10, 20, 40, 80 … capped at 5 minutes. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(5 * 2 ** Math.max(0, attempts - 1), 300);
}

export async function consumeChunks(batch: MessageBatch<unknown>, env: Env, clock: Clock): Promise<void> {
  // Copies of one chunk in the same delivery are one piece of work: run once, answered together.
  const copies = new Map<string, { chunk: ChunkMessage; messages: Message<unknown>[] }>();
  for (const message of batch.messages) {
    const parsed = chunkMessageSchema.safeParse(message.body);
    if (!parsed.success) {
      // Retrying cannot fix a malformed message: log it (never its body) and drop it.
      console.error(JSON.stringify({ level: 'error', event: 'chunk_message_malformed', message_id: message.id }));
      message.ack();
      continue;
    }
    const key = `${parsed.data.batchId}:${parsed.data.chunk}`;
    const entry = copies.get(key);
    if (entry) entry.messages.push(message);
    else copies.set(key, { chunk: parsed.data, messages: [message] });
  }
  // The chunks of one delivery run side by side: each is I/O-bound (R2, D1, the object).
  await Promise.all([...copies.values()].map(({ chunk, messages }) => consumeOne(chunk, messages, env, clock)));
}

async function consumeOne(chunk: ChunkMessage, messages: Message<unknown>[], env: Env, clock: Clock): Promise<void> {
  const attempts = Math.max(...messages.map((message) => message.attempts));
  try {
    const outcome = await processChunk(env, chunk, clock);
    if (!outcome.ok && outcome.reason === 'rows_in_flight') {
      // Another delivery of this chunk holds its rows: ask again once it has finished, or once its
      // claims count as abandoned (then this attempt settles them).
      const delaySeconds = Math.max(retryDelaySeconds(attempts), outcome.retryAfterSeconds);
      console.warn(JSON.stringify({ level: 'warn', event: 'chunk_rows_in_flight', batch_id: chunk.batchId, chunk: chunk.chunk, delay_seconds: delaySeconds }));
      for (const message of messages) message.retry({ delaySeconds });
      return;
    }
    if (!outcome.ok) {
      console.warn(JSON.stringify({ level: 'warn', event: 'chunk_skipped', reason: outcome.reason, batch_id: chunk.batchId, chunk: chunk.chunk }));
    }
    for (const message of messages) message.ack();
  } catch (err) {
    // Transient (D1, R2, the object, the engine): retried with backoff; after max_retries the
    // message goes to the dead-letter queue, whose consumer fails the batch.
    const error = err instanceof Error ? err : new Error(String(err));
    console.error(
      JSON.stringify({
        level: 'error',
        event: 'chunk_failed',
        batch_id: chunk.batchId,
        chunk: chunk.chunk,
        attempts,
        error: error.name,
        message: redactDigits(error.message),
      }),
    );
    for (const message of messages) message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
  }
}
