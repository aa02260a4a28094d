import { z } from 'zod';

/**
 * One queue message per chunk of a batch file: where its rows are in the uploaded file.
 * It never carries row data or card numbers; the consumer reads the rows from R2.
 */
export const chunkMessageSchema = z.object({
  batchId: z.string().min(1),
  chunk: z.int().min(0),
  offset: z.int().min(0),
  length: z.int().min(1),
  firstLine: z.int().min(2),
});

export type ChunkMessage = z.infer<typeof chunkMessageSchema>;
