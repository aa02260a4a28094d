export interface ShellCommand {
  text: string;
  expected: string[];
  section: string;
  /** False for a ```sh no-check block: copied into the OpenAPI document, not run by readme:check. */
  check: boolean;
}
/** One page whose examples are read: its path from the repository root and its text. */
export interface ExamplePage {
  page: string;
  markdown: string;
}
/** A curl example of the README or a docs page: the type the generated src/openapi/readme-examples.ts declares. */
export type CurlExample = import('../src/openapi/readme-examples').ReadmeExample;
export const EXAMPLE_PAGES: string[];
export function shellCommands(markdown: string): ShellCommand[];
export function curlExamples(pages: ExamplePage[]): CurlExample[];
export function readmeExamplesModule(pages: ExamplePage[]): string;
