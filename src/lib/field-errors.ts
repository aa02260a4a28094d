/** A problem with one named field: what a 400 lists, and what a refused batch row reports. */
export interface FieldError {
  field: string;
  msg: string;
}

/** "field: problem; other: problem": what went wrong and where, in one line. */
export function describeFieldErrors(errors: readonly FieldError[]): string {
  return errors.map((e) => `${e.field}: ${e.msg}`).join('; ');
}
