/** What the tokenizer answers (inside the success envelope). */
import { z } from 'zod';
import { timestampSchema } from './envelope';
import { TEMP_TOKEN_PATTERN } from './tokenizer';

export const tempTokenSchema = z
  .strictObject({
    temp_token: z.string().regex(TEMP_TOKEN_PATTERN).meta({ description: '`tok_` and 32 characters; usable for 15 minutes by this merchant only.' }),
    expires_at: timestampSchema,
  })
  .meta({ id: 'TempToken', example: { temp_token: 'tok_3q2-7XyZa9bC4dE5fG6hI7jK8lM9nO0p', expires_at: '2026-11-21T05:45:00.000Z' } });

export type TempToken = z.infer<typeof tempTokenSchema>;
