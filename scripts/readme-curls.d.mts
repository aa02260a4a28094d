export interface ShellCommand {
  text: string;
  expected: string[];
  section: string;
}
/** A README curl example: the same shape the generated src/openapi/readme-examples.ts holds. */
export type CurlExample = import('../src/openapi/document').ReadmeExample;
export function shellCommands(markdown: string): ShellCommand[];
export function curlExamples(markdown: string): CurlExample[];
export function readmeExamplesModule(markdown: string): string;
