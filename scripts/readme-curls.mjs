/**
 * Reads the shell examples of the README and the docs pages: every ```sh block, split into commands
 * (a command goes on while a line ends in `\` or a quote is open), each with the `# →` answer lines
 * written under it. Used by scripts/readme-check.mjs (which runs them), scripts/readme-examples.mjs
 * (which copies the curl examples into the OpenAPI document) and the test that keeps that copy in step.
 * Pure functions: no Node API, so the workerd tests can import it too.
 *
 * Fences: ```sh blocks are run by `npm run readme:check` and copied into the OpenAPI document;
 * ```sh no-check blocks are copied but not run (they need what the check does not start: a webhook
 * receiver, a deployed Worker); ```console blocks are illustrations, neither run nor copied.
 */

/**
 * The pages whose examples run, in this order, in one shell (variables carry over from one page to
 * the next): the README's tour first, then each area's reference. A page added here is checked by
 * `npm run readme:check` and feeds the OpenAPI document's code samples.
 */
export const EXAMPLE_PAGES = [
  'README.md',
  'docs/api.md',
  'docs/bin-lookup.md',
  'docs/vault.md',
  'docs/tokenizer.md',
  'docs/transactions.md',
  'docs/receipts.md',
  'docs/batch.md',
  'docs/webhooks.md',
  'docs/deploy.md',
];

/** Every command of every ```sh block, in order: { text, expected: string[], section, check }. */
export function shellCommands(markdown) {
  const commands = [];
  let section = '';
  let inBlock = false;
  let pending = null;
  let lastCommand = null;
  let inAnswer = false;
  let check = true;
  for (const line of markdown.split('\n')) {
    if (!inBlock) {
      const heading = /^#{1,6}\s+(.*)$/.exec(line);
      if (heading) section = heading[1].trim();
      const fence = /^```(sh|bash|shell)(\s+no-check)?\s*$/.exec(line);
      if (fence) {
        inBlock = true;
        check = fence[2] === undefined;
        lastCommand = null;
        inAnswer = false;
      }
      continue;
    }
    if (pending === null && /^```\s*$/.test(line)) {
      inBlock = false;
      continue;
    }
    if (pending !== null) {
      pending.text += '\n' + line;
      if (!continues(pending.text)) {
        commands.push(finish(pending));
        lastCommand = commands[commands.length - 1];
        pending = null;
      }
      continue;
    }
    const trimmed = line.trim();
    if (trimmed === '') {
      // An answer belongs to the command right above it, never across a blank line.
      inAnswer = false;
      lastCommand = null;
      continue;
    }
    if (trimmed.startsWith('#')) {
      const answer = /^#\s*→\s?(.*)$/.exec(trimmed);
      if (answer && lastCommand) {
        lastCommand.expected.push(answer[1]);
        inAnswer = true;
      } else if (inAnswer && lastCommand && /^#\s{2,}/.test(trimmed)) {
        // An answer continued on the next comment line, indented under the arrow.
        lastCommand.expected[lastCommand.expected.length - 1] += trimmed.replace(/^#\s+/, '');
      } else {
        inAnswer = false;
      }
      continue;
    }
    inAnswer = false;
    pending = { text: line, expected: [], section, check };
    if (!continues(pending.text)) {
      commands.push(finish(pending));
      lastCommand = commands[commands.length - 1];
      pending = null;
    }
  }
  return commands;
}

function finish(command) {
  return { text: stripComment(command.text).replace(/\s+$/, ''), expected: command.expected, section: command.section, check: command.check };
}

/** True while the command is unfinished: a trailing backslash, an open quote or an open `$(`. */
function continues(text) {
  const state = scan(text);
  return state.quote !== null || state.depth > 0 || /\\\s*$/.test(stripComment(text));
}

function scan(text) {
  let quote = null;
  let depth = 0;
  let commentAt = -1;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quote === "'") {
      if (ch === "'") quote = null;
      continue;
    }
    if (ch === '\\') {
      i++;
      continue;
    }
    if (quote === '"') {
      if (ch === '"') quote = null;
      continue;
    }
    if (ch === "'" || ch === '"') quote = ch;
    else if (ch === '$' && text[i + 1] === '(') {
      depth++;
      i++;
    } else if (ch === ')' && depth > 0) depth--;
    else if (ch === '#' && (i === 0 || /\s/.test(text[i - 1])) && commentAt < 0) {
      commentAt = i;
      // The rest of this line is a comment.
      const end = text.indexOf('\n', i);
      if (end < 0) break;
      i = end;
    }
  }
  return { quote, depth, commentAt };
}

/** The command without a trailing `# comment` on its lines (quotes respected). */
function stripComment(text) {
  return text
    .split('\n')
    .map((line) => {
      const { commentAt } = scan(line);
      return commentAt >= 0 ? line.slice(0, commentAt).replace(/\s+$/, '') : line;
    })
    .join('\n');
}

/** Shell words of a curl invocation (quotes removed, `$VAR` left as written). */
function words(text) {
  const out = [];
  let word = null;
  let quote = null;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quote === "'") {
      if (ch === "'") quote = null;
      else word += ch;
      continue;
    }
    if (quote === '"') {
      if (ch === '"') quote = null;
      else if (ch === '\\' && i + 1 < text.length) word += text[++i];
      else word += ch;
      continue;
    }
    if (ch === '\\' && text[i + 1] === '\n') {
      i++;
      continue;
    }
    if (/\s/.test(ch)) {
      if (word !== null) out.push(word);
      word = null;
      continue;
    }
    word ??= '';
    if (ch === "'" || ch === '"') quote = ch;
    else if (ch === '\\') word += text[++i] ?? '';
    else word += ch;
  }
  if (word !== null) out.push(word);
  return out;
}

/** The curl part of a command: from `curl` to the first unquoted `|`, `)`, `;` or `&&`. */
function curlPart(text) {
  const start = text.search(/(^|[\s($])curl\s/);
  if (start < 0) return null;
  const from = text.indexOf('curl', start);
  let quote = null;
  for (let i = from; i < text.length; i++) {
    const ch = text[i];
    if (quote) {
      if (ch === quote) quote = null;
      else if (ch === '\\' && quote === '"') i++;
      continue;
    }
    if (ch === "'" || ch === '"') quote = ch;
    else if (ch === '\\') i++;
    else if (ch === '|' || ch === ')' || ch === ';' || (ch === '&' && text[i + 1] === '&')) return text.slice(from, i);
  }
  return text.slice(from);
}

/**
 * The curl examples against the API of every page ({ page, markdown }, in EXAMPLE_PAGES order):
 * method, path (as written, `$ID` and all), query, body (the text after -d / --data-binary, or
 * `@file`), content type, the text, and the page and section it is in.
 */
export function curlExamples(pages) {
  const examples = [];
  const commands = pages.flatMap(({ page, markdown }) => shellCommands(markdown).map((command) => ({ page, command })));
  for (const { page, command } of commands) {
    const part = curlPart(command.text);
    if (part === null) continue;
    const args = words(part);
    let method = null;
    let url = null;
    let body = null;
    let form = false;
    const headers = {};
    for (let i = 1; i < args.length; i++) {
      const arg = args[i];
      if (arg === '-X') method = args[++i];
      else if (arg === '-H') {
        const [name, ...rest] = args[++i].split(':');
        headers[name.trim().toLowerCase()] = rest.join(':').trim();
      } else if (arg === '-d' || arg === '--data' || arg === '--data-binary') body = args[++i];
      else if (arg === '-F') {
        form = true;
        i++;
      } else if (arg === '-o' || arg === '-w') i++;
      else if (/^(https?:\/\/|\$[A-Z_]+\/)/.test(arg)) url = arg;
    }
    if (url === null) continue;
    const parsed = /^(?:https?:\/\/[^/]+|\$[A-Z_]+)(\/[^?#]*)(\?[^#]*)?/.exec(url);
    if (!parsed || parsed[1].startsWith('/cdn-cgi/')) continue;
    method ??= body !== null || form ? 'POST' : 'GET';
    examples.push({
      method: method.toUpperCase(),
      path: parsed[1],
      query: parsed[2] ?? '',
      contentType: headers['content-type'] ?? (form ? 'multipart/form-data' : null),
      body,
      source: [command.text, ...command.expected.map((line) => `# → ${line}`)].join('\n'),
      page: page.replace(/\.md$/, ''),
      section: command.section,
    });
  }
  return examples;
}

/** The text of src/openapi/readme-examples.ts for these pages ({ page, markdown }). */
export function readmeExamplesModule(pages) {
  return (
    '// Generated by `npm run readme:examples` from README.md and the docs pages: do not edit by hand.\n' +
    '\n' +
    '/** One curl example of the README or a docs page: its request, its source text, its page and section. */\n' +
    'export interface ReadmeExample {\n' +
    '  method: string;\n' +
    '  path: string;\n' +
    '  query: string;\n' +
    '  contentType: string | null;\n' +
    '  body: string | null;\n' +
    '  source: string;\n' +
    '  page: string;\n' +
    '  section: string;\n' +
    '}\n\n' +
    `export const README_EXAMPLES: ReadmeExample[] = ${JSON.stringify(curlExamples(pages), null, 2)};\n`
  );
}
