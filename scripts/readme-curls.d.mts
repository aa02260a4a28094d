export interface ShellCommand {
  text: string;
  expected: string[];
  section: string;
}
export interface CurlExample {
  method: string;
  path: string;
  query: string;
  contentType: string | null;
  body: string | null;
  source: string;
  section: string;
}
export function shellCommands(markdown: string): ShellCommand[];
export function curlExamples(markdown: string): CurlExample[];
export function readmeExamplesModule(markdown: string): string;
