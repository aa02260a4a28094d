/**
 * A guard against tests that cannot fail. Every test file (test/**\/*.test.ts, test/browser/*.spec.ts)
 * is parsed with the TypeScript compiler and refused when it has:
 * - an `it(...)` / `test(...)` (or `.each`) whose function makes no assertion: no `expect`, no
 *   `assert` (fast-check's `fc.assert` included), and no call of a helper that makes one;
 * - a `.skip`, `.only`, `.todo`, `.skipIf` or `.runIf` on `it`, `test` or `describe`;
 * - an `expect` whose subject is a literal (`expect(true).toBe(true)`), or an `expect(...)` with no matcher.
 *
 * What it cannot see: whether an assertion runs (one inside an `if`, a loop over nothing, or a
 * callback never called counts all the same), whether it checks what the test's name promises,
 * or helpers it cannot tell apart: a helper is known by its name alone (a function or arrow
 * function anywhere under test/ whose body asserts, directly or through another such helper), so
 * two helpers of one name count as asserting if either does. A test whose function is passed by
 * name rather than written in place is not checked.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const TEST_ROOT = fileURLToPath(new URL('..', import.meta.url));
const TEST_CALLEES = new Set(['it', 'test']);
const SKIPPING = new Set(['skip', 'only', 'todo', 'skipIf', 'runIf']);

interface Source {
  name: string;
  text: string;
}

function parse(source: Source): ts.SourceFile {
  return ts.createSourceFile(source.name, source.text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
}

function visit(node: ts.Node, each: (node: ts.Node) => void): void {
  each(node);
  node.forEachChild((child) => visit(child, each));
}

/** The name a call is made by: `expect` for `expect(x)` and `expect.soft(x)`, `assert` for `fc.assert(p)`. */
function calleeNames(call: ts.CallExpression): string[] {
  const names: string[] = [];
  let callee: ts.Expression = call.expression;
  if (ts.isPropertyAccessExpression(callee)) names.push(callee.name.text);
  while (ts.isPropertyAccessExpression(callee)) callee = callee.expression;
  if (ts.isIdentifier(callee)) names.push(callee.text);
  return names;
}

function isAssertingName(name: string, helpers: ReadonlySet<string>): boolean {
  return name === 'expect' || name === 'assert' || helpers.has(name);
}

function asserts(body: ts.Node, helpers: ReadonlySet<string>): boolean {
  let found = false;
  visit(body, (node) => {
    if (ts.isCallExpression(node) && calleeNames(node).some((name) => isAssertingName(name, helpers))) found = true;
  });
  return found;
}

/** Named functions and arrow functions, with their bodies. */
function namedFunctions(file: ts.SourceFile): [string, ts.Node][] {
  const found: [string, ts.Node][] = [];
  visit(file, (node) => {
    if (ts.isFunctionDeclaration(node) && node.name && node.body) found.push([node.name.text, node.body]);
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) {
      const init = node.initializer;
      if (ts.isArrowFunction(init) || ts.isFunctionExpression(init)) found.push([node.name.text, init.body]);
    }
  });
  return found;
}

/** Helpers that assert, directly or through one another, across all the given files. */
function assertingHelpers(files: ts.SourceFile[]): Set<string> {
  const functions = files.flatMap(namedFunctions);
  const helpers = new Set<string>();
  for (let grew = true; grew; ) {
    grew = false;
    for (const [name, body] of functions) {
      if (!helpers.has(name) && asserts(body, helpers)) {
        helpers.add(name);
        grew = true;
      }
    }
  }
  return helpers;
}

function isLiteral(node: ts.Expression): boolean {
  if (ts.isParenthesizedExpression(node)) return isLiteral(node.expression);
  if (ts.isPrefixUnaryExpression(node)) return isLiteral(node.operand);
  return (
    ts.isLiteralExpression(node) || // strings, numbers, big ints, regexes, templates without substitutions
    node.kind === ts.SyntaxKind.TrueKeyword ||
    node.kind === ts.SyntaxKind.FalseKeyword ||
    node.kind === ts.SyntaxKind.NullKeyword ||
    (ts.isIdentifier(node) && node.text === 'undefined')
  );
}

/** `it(...)`, `test(...)`, `it.each(...)(...)`, `test.concurrent(...)`: the test's function, if written in place. */
function testFunction(call: ts.CallExpression): ts.FunctionLikeDeclaration | null {
  const callee = call.expression;
  const base = ts.isCallExpression(callee) ? callee.expression : callee; // it.each(table)(name, fn)
  const root = ts.isPropertyAccessExpression(base) ? base.expression : base;
  if (!ts.isIdentifier(root) || !TEST_CALLEES.has(root.text)) return null;
  // it.skip(...) is reported on its own; it.each(table) is not a test until it is called.
  if (ts.isPropertyAccessExpression(callee) && callee.name.text !== 'concurrent') return null;
  const fn = [...call.arguments].reverse().find((arg) => ts.isArrowFunction(arg) || ts.isFunctionExpression(arg));
  return fn && (ts.isArrowFunction(fn) || ts.isFunctionExpression(fn)) ? fn : null;
}

/** Each slip in one file, as "file:line: what". */
function findSlips(file: ts.SourceFile, helpers: ReadonlySet<string>): string[] {
  const slips: string[] = [];
  const at = (node: ts.Node, what: string) => {
    const { line } = file.getLineAndCharacterOfPosition(node.getStart(file));
    slips.push(`${file.fileName}:${line + 1}: ${what}`);
  };
  visit(file, (node) => {
    if (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression) && SKIPPING.has(node.name.text)) {
      if (['it', 'test', 'describe'].includes(node.expression.text)) at(node, `${node.expression.text}.${node.name.text}`);
    }
    if (!ts.isCallExpression(node)) return;
    const fn = testFunction(node);
    if (fn?.body && !asserts(fn.body, helpers)) at(node, 'a test that asserts nothing');
    if (ts.isIdentifier(node.expression) && node.expression.text === 'expect') {
      const [subject] = node.arguments;
      if (subject && isLiteral(subject)) at(node, `expect of a literal (${subject.getText(file)})`);
      if (ts.isExpressionStatement(node.parent) || ts.isAwaitExpression(node.parent)) at(node, 'expect(...) with no matcher');
    }
  });
  return slips;
}

function testSources(): Source[] {
  const names = readdirSync(TEST_ROOT, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.ts') && !name.includes('node_modules'));
  return names.map((name) => ({ name: `test/${name}`, text: readFileSync(`${TEST_ROOT}${name}`, 'utf8') }));
}

const isTestFile = (name: string) => /\.test\.ts$/.test(name) || /^test\/browser\/.*\.spec\.ts$/.test(name);

describe('test hygiene', () => {
  it('finds each kind of slip in a sample', () => {
    const sample = parse({
      name: 'sample.test.ts',
      text: [
        "it('checks nothing', () => { const x = 1 + 1; });",
        "it.skip('skipped', () => { expect(1 + 1).toBe(2); });",
        "describe.only('only', () => {});",
        "it('a literal', () => { expect(true).toBe(true); });",
        "it('no matcher', () => { expect(compute()); });",
        "it.each([1])('each, nothing', (n) => { n + 1; });",
        "function expectTwo(n: number) { expect(n).toBe(2); }",
        "it('through a helper', () => { expectTwo(1 + 1); });",
        "it('a property', () => { fc.assert(fc.property(fc.nat(), (n) => n >= 0)); });",
        "it('async, in a callback', async () => { await vi.waitFor(() => expect(f()).toBe(1)); });",
      ].join('\n'),
    });
    expect(findSlips(sample, assertingHelpers([sample]))).toEqual([
      'sample.test.ts:1: a test that asserts nothing',
      'sample.test.ts:2: it.skip',
      'sample.test.ts:3: describe.only',
      'sample.test.ts:4: expect of a literal (true)',
      'sample.test.ts:5: expect(...) with no matcher',
      'sample.test.ts:6: a test that asserts nothing',
    ]);
  });

  it('no test file has a test that asserts nothing, a skip or only, or an expect of a literal', () => {
    const files = testSources().map(parse);
    const testFiles = files.filter((file) => isTestFile(file.fileName));
    expect(testFiles.length).toBeGreaterThan(40); // the walk found the suite
    const helpers = assertingHelpers(files);
    expect(testFiles.flatMap((file) => findSlips(file, helpers))).toEqual([]);
  });
});
