/**
 * A real third-party client (issue 24): types generated from the live document by openapi-typescript,
 * a program written with openapi-fetch (test/node/third-party-client/program.ts) compiled with
 * TypeScript strict, then run against `npm run dev` on free ports: lookup, vault customer,
 * multipart upload (and the raw text/csv one), status, CSV download as text, and an error read
 * through `msg` and `data`.
 *
 * The generator's one option is its documented mapping of `format: binary` to `Blob` (and of a
 * multipart body to the FormData openapi-fetch sends as it is); nothing in the program is cast or
 * serialized by hand.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devServerTurn, freePortsIn } from './ports';

const root = fileURLToPath(new URL('../..', import.meta.url));
const programDir = fileURLToPath(new URL('./third-party-client/', import.meta.url));
const programPath = join(programDir, 'program.ts');
const generatedPath = join(programDir, 'generated', 'api.d.ts');
const DEMO_SECRET_KEY = 'api_demoSecretKey0000000000000000000';

/** What program.ts's `run` answers (its own type needs the generated file). */
interface ProgramOutcome {
  brand: string | undefined;
  surchargeable: boolean | undefined;
  customerId: string;
  batchId: string;
  rawUpload: { fileName: string; numLines: number };
  status: string;
  resultsCsv: string;
  requestId: string | null;
  refused: { status: number; msg: string; data: unknown; fields: string[] };
  unknownField: string;
}

/** Resolves once GET /healthz answers 200; rejects when the server ends first. */
async function healthy(url: string, ended: () => string | null): Promise<void> {
  for (;;) {
    const end = ended();
    if (end !== null) throw new Error(`npm run dev ended before it answered:\n${end}`);
    try {
      if ((await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) })).ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The generator's options: binary strings are Blobs, a multipart body is FormData. */
function generatorTransform(schema: { format?: string }, options: { path?: string }): ts.TypeNode | undefined {
  if (/\/requestBody\/content\/multipart~1form-data$/.test(options.path ?? '')) return ts.factory.createTypeReferenceNode('FormData');
  if (schema.format === 'binary') return ts.factory.createTypeReferenceNode('Blob');
  return undefined;
}

/** TypeScript strict over the program and the generated types: the diagnostics, formatted. */
function compile(): string[] {
  const program = ts.createProgram([programPath], {
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2023,
    module: ts.ModuleKind.ES2022,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
    types: [],
    skipLibCheck: true,
  });
  return ts
    .getPreEmitDiagnostics(program)
    .map((d) => `${d.file?.fileName ?? ''}:${d.start ?? ''} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
}

describe('a third-party client (openapi-typescript + openapi-fetch) against npm run dev', () => {
  let url = '';
  let releaseTurn = () => {};
  let stop: () => Promise<void> = async () => {};

  beforeAll(async () => {
    // One `npm run dev` of the tests starting at a time (test/node/ports.ts).
    releaseTurn = await devServerTurn(240_000);
    // This file's range (test/node/ports.ts); test/node/dev-signals.test.ts takes 8870-8879.
    const [port, inspectorPort] = (await freePortsIn(8880, 8889, 2)) as [number, number];
    const state = mkdtempSync(join(tmpdir(), 'binbatch-third-party-'));
    const dev = spawn('npm', ['run', '--silent', 'dev', '--', '--port', String(port), '--inspector-port', String(inspectorPort), '--no-demo', '--persist-to', state], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    let exit: string | null = null;
    dev.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    dev.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<void>((resolve) =>
      dev.on('exit', (code) => {
        exit = `exit ${code}\n${output}`;
        resolve();
      }),
    );
    stop = async () => {
      // The whole process group: npm, the dev script, wrangler and workerd.
      if (exit === null) process.kill(-(dev.pid as number), 'SIGTERM');
      await exited;
      rmSync(state, { recursive: true, force: true });
    };
    url = `http://127.0.0.1:${port}`;
    await healthy(url, () => exit);
    releaseTurn();
  }, 360_000);

  afterAll(async () => {
    try {
      await stop();
    } finally {
      releaseTurn();
    }
  }, 30_000);

  it('generates types from the live document, compiles a strict openapi-fetch program, and runs it', async () => {
    const document = (await (await fetch(`${url}/openapi.json`)).json()) as Parameters<typeof openapiTS>[0];
    mkdirSync(join(programDir, 'generated'), { recursive: true });
    writeFileSync(generatedPath, astToString(await openapiTS(document, { transform: generatorTransform })));
    const generated = readFileSync(generatedPath, 'utf8');
    // The upload's file part and raw body are binary, the multipart body the FormData openapi-fetch passes through.
    expect(generated).toMatch(/"multipart\/form-data": FormData;/);
    expect(generated).toMatch(/"text\/csv": Blob;/);

    expect(compile()).toEqual([]);

    // Loaded by path: the root typecheck does not follow it (its types exist only once generated).
    const { run } = (await import(/* @vite-ignore */ programPath)) as { run: (baseUrl: string, key: string, csv: string) => Promise<ProgramOutcome> };
    const csv = readFileSync(join(root, 'examples/batch-sample.csv'), 'utf8');
    const outcome = await run(url, DEMO_SECRET_KEY, csv);

    expect(outcome.brand).toBe('visa');
    expect(typeof outcome.surchargeable).toBe('boolean');
    expect(outcome.customerId).toMatch(/^[A-Za-z0-9]+$/);
    expect(outcome.status).toBe('completed');
    expect(outcome.rawUpload).toEqual({ fileName: 'third-party-raw.csv', numLines: csv.trim().split('\n').length - 1 });
    const lines = outcome.resultsCsv.trim().split('\n');
    expect(lines).toHaveLength(csv.trim().split('\n').length);
    expect(lines[0]).toMatch(/^"id","user_name",/);
    expect(outcome.refused).toEqual({ status: 400, msg: 'bin: must be 6 to 19 digits (0-9 only)', data: null, fields: ['bin'] });
    expect(outcome.requestId).toMatch(/.+/);
    expect(outcome.unknownField).toBe('State: unknown field; did you mean state?');
  }, 120_000);
});
