/** What `POST /api/filebatch?validate_only=true` answers (services/batches/validate-upload.ts). */
import { z } from 'zod';
import { successEnvelopeSchema } from './envelope';

export const fileReportSchema = z
  .strictObject({
    file_name: z.string(),
    num_lines: z.int().min(0).meta({ description: 'Data rows read (the header not counted).' }),
    row_errors: z
      .array(z.strictObject({ row: z.int().min(2), column: z.string(), message: z.string() }))
      .meta({ description: 'The problems a run would report, in file order: the first 1,000 (a row may have several).' }),
    row_error_count: z.int().min(0).meta({ description: 'Rows with at least one problem, all of them.' }),
    rows_by_type: z.record(z.string(), z.int().min(0)).meta({ description: 'Rows a run would act on, by transaction_type.' }),
    totals: z
      .record(z.string(), z.record(z.string(), z.int().min(0)))
      .meta({ description: 'Minor units by currency, then by transaction_type, over the rows a run would act on.' }),
    rows_without_amount: z.int().min(0).meta({ description: 'Capture and refund rows without an amount (each acts on the whole amount left; voids are not counted).' }),
    ledger_checked_rows: z
      .int()
      .min(0)
      .meta({ description: 'Capture, void and refund rows naming a transaction id that were checked against the transaction as it is now (found, of this merchant, in a state and with an amount left that allow the row).' }),
    ledger_unchecked_rows: z
      .int()
      .min(0)
      .meta({ description: 'Such rows past what one check reads from the ledger (a very large file): the run checks them as it reaches them.' }),
  })
  .meta({ id: 'FileReport' });

export const validateOnlyResponseSchema = successEnvelopeSchema(fileReportSchema).meta({
  id: 'ValidateOnlyResponse',
  example: {
    status: 'success',
    msg: 'success',
    data: {
      file_name: 'captures.csv',
      num_lines: 4,
      row_errors: [{ row: 5, column: 'amount', message: 'must be empty for a void (a void releases the whole transaction)' }],
      row_error_count: 1,
      rows_by_type: { capture: 2, refund: 1 },
      totals: { USD: { capture: 600, refund: 250 } },
      rows_without_amount: 1,
      ledger_checked_rows: 3,
      ledger_unchecked_rows: 0,
    },
  },
});

export type FileReportAnswer = z.infer<typeof fileReportSchema>;
