/**
 * Runs once in Node before the workerd test files: builds the OpenAPI document the answers are held
 * to (test/helpers/contract.ts) and hands it to every file. Building it from the zod schemas takes a
 * few hundred milliseconds, which every one of the hundred test files would otherwise spend again in
 * its own fresh workerd. It is the document GET /openapi.json serves, built by the same code
 * (test/integration/openapi.test.ts checks that the copy handed over equals the one the Worker builds).
 */
import type { TestProject } from 'vitest/node';
import { openApiDocument } from '../src/openapi/document';

export default function setup(project: TestProject): void {
  project.provide('openApiDocument', JSON.stringify(openApiDocument()));
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** JSON of the OpenAPI document, built once in Node. */
    openApiDocument: string;
  }
}
