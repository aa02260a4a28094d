/** Consumer of `binbatch-chunks-dlq`: a chunk that exhausted its retries fails its batch. */
import type { Env } from '../env';
import { chunkMessageSchema } from '../schemas/queue';
import { failBatch, lifecycleDeps } from '../services/batches/lifecycle';
import { deadLetterRetryDelaySeconds } from './backoff';

export async function consumeDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const lifecycle = lifecycleDeps(env);
  for (const message of batch.messages) {
    const parsed = chunkMessageSchema.safeParse(message.body);
    if (!parsed.success) {
      console.error(JSON.stringify({ level: 'error', event: 'dead_letter_malformed', message_id: message.id }));
      message.ack();
      continue;
    }
    const { batchId, chunk, firstLine } = parsed.data;
    const reason = `chunk ${chunk} (from line ${firstLine}) could not be processed after repeated attempts`;
    try {
      const result = await failBatch(lifecycle, batchId, reason, chunk);
      if (result === null) {
        console.warn(JSON.stringify({ level: 'warn', event: 'dead_letter_unknown_batch', batch_id: batchId, chunk }));
      }
      message.ack();
    } catch (err) {
      // The object or D1 is unreachable: try again later (this queue has its own retries).
      console.error(JSON.stringify({ level: 'error', event: 'dead_letter_failed', batch_id: batchId, chunk, error: err instanceof Error ? err.name : 'unknown' }));
      message.retry({ delaySeconds: deadLetterRetryDelaySeconds(message.attempts) });
    }
  }
}
