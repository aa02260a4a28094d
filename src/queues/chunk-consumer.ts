/** Consumer of `binbatch-chunks`: one message = one chunk of a batch file (see services/batch-chunks.ts). */
import type { Env } from '../env';
import { redactDigits } from '../lib/redact';
import type { Clock } from '../lib/time';
import { chunkMessageSchema } from '../schemas/queue';
import { processChunk } from '../services/batches/chunks';

/** Seconds before the n-th retry: 5, 10, 20, 40, 80 … capped at 5 minutes. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(5 * 2 ** Math.max(0, attempts - 1), 300);
}

export async function consumeChunks(batch: MessageBatch<unknown>, env: Env, clock: Clock): Promise<void> {
  // The messages of one delivery run side by side: each is I/O-bound (R2, D1, the object).
  await Promise.all(batch.messages.map((message) => consumeOne(message, env, clock)));
}

async function consumeOne(message: Message<unknown>, env: Env, clock: Clock): Promise<void> {
  const parsed = chunkMessageSchema.safeParse(message.body);
  if (!parsed.success) {
    // Retrying cannot fix a malformed message: log it (never its body) and drop it.
    console.error(JSON.stringify({ level: 'error', event: 'chunk_message_malformed', message_id: message.id }));
    message.ack();
    return;
  }
  const chunk = parsed.data;
  try {
    const outcome = await processChunk(env, chunk, clock);
    if (!outcome.ok) {
      console.warn(JSON.stringify({ level: 'warn', event: 'chunk_skipped', reason: outcome.reason, batch_id: chunk.batchId, chunk: chunk.chunk }));
    }
    message.ack();
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
        attempts: message.attempts,
        error: error.name,
        message: redactDigits(error.message),
      }),
    );
    message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
  }
}
