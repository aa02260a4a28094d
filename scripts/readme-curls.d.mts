export interface ShellCommand {
  text: string;
  expected: string[];
  section: string;
}
/** A README curl example: the type the generated src/openapi/readme-examples.ts declares. */
export type CurlExample = import('../src/openapi/readme-examples').ReadmeExample;
export function shellCommands(markdown: string): ShellCommand[];
export function curlExamples(markdown: string): CurlExample[];
export function readmeExamplesModule(markdown: string): string;
