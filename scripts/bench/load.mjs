// HTTP load: wrk when it is installed (a C load generator; the lighter choice on a 2-core machine,
// where the generator competes with workerd for CPU), else autocannon (a devDependency, so
// `npm run bench` works on a fresh clone). Both run a fixed number of connections for a fixed
// duration after an unmeasured warm-up, and report requests/s with p50/p99 latency.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** "wrk" when it is on PATH, else "autocannon". */
export function detectTool() {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return 'wrk';
  } catch (error) {
    // wrk --version exits 1 after printing its banner; only a missing binary is ENOENT.
    return error.code === 'ENOENT' ? 'autocannon' : 'wrk';
  }
}

export function wrkVersion() {
  try {
    execFileSync('wrk', ['--version'], { encoding: 'utf8' });
  } catch (error) {
    return String(error.stdout ?? '').split('\n')[0].trim();
  }
  return 'wrk';
}

// Each connection sends the next body of the list (one JSON document per line); the list is walked
// once before it wraps, so a cold run over N distinct BINs never repeats one within N requests.
const WRK_SCRIPT = `
local bodies = {}
local n = 0
local i = 0
function init(args)
  wrk.method = os.getenv("BENCH_METHOD") or "GET"
  local auth = os.getenv("BENCH_AUTH")
  if auth and auth ~= "" then wrk.headers["Authorization"] = auth end
  local file = os.getenv("BENCH_BODIES")
  if file and file ~= "" then
    for line in io.lines(file) do n = n + 1; bodies[n] = line end
    wrk.headers["Content-Type"] = "application/json"
  end
end
function request()
  if n == 0 then return wrk.format() end
  local body = bodies[(i % n) + 1]
  i = i + 1
  return wrk.format(nil, nil, nil, body)
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"mean":%.1f,"p50":%d,"p90":%d,"p99":%d,"max":%d}\\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
`;

async function runWrk({ url, method, auth, bodies, connections, durationS }) {
  const dir = mkdtempSync(join(tmpdir(), 'binbatch-wrk-'));
  try {
    const script = join(dir, 'bench.lua');
    writeFileSync(script, WRK_SCRIPT);
    const env = { ...process.env, BENCH_METHOD: method, BENCH_AUTH: auth ?? '' };
    if (bodies) {
      env.BENCH_BODIES = join(dir, 'bodies.jsonl');
      writeFileSync(env.BENCH_BODIES, bodies.map((b) => JSON.stringify(b)).join('\n') + '\n');
    }
    // One wrk thread: it drives tens of thousands of requests/s, and leaves the second core to workerd.
    const args = ['-t1', `-c${connections}`, `-d${durationS}s`, '--timeout', '10s', '-s', script, url];
    return await new Promise((resolveRun, reject) => {
      const child = spawn('wrk', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('error', reject);
      child.on('exit', (code) => {
        const line = stdout.split('\n').find((l) => l.startsWith('BENCH_JSON '));
        if (code !== 0 || !line) return reject(new Error(`wrk failed (${code}): ${stderr || stdout}`));
        const r = JSON.parse(line.slice('BENCH_JSON '.length));
        const seconds = r.duration_us / 1e6;
        resolveRun({
          requests: r.requests,
          rps: r.requests / seconds,
          p50Ms: r.p50 / 1000,
          p90Ms: r.p90 / 1000,
          p99Ms: r.p99 / 1000,
          meanMs: r.mean / 1000,
          maxMs: r.max / 1000,
          non2xx: r.status,
          errors: r.connect + r.read + r.write + r.timeout,
          seconds,
        });
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runAutocannon({ url, method, auth, bodies, connections, durationS }) {
  const { default: autocannon } = await import('autocannon');
  let next = 0;
  const headers = auth ? { authorization: auth } : {};
  if (bodies) headers['content-type'] = 'application/json';
  const request = bodies
    ? { setupRequest: (req) => ({ ...req, body: JSON.stringify(bodies[next++ % bodies.length]) }) }
    : {};
  const result = await autocannon({ url, method, headers, connections, duration: durationS, requests: [request] });
  return {
    requests: result.requests.total,
    rps: result.requests.total / result.duration,
    p50Ms: result.latency.p50,
    p90Ms: result.latency.p90,
    p99Ms: result.latency.p99,
    meanMs: result.latency.average,
    maxMs: result.latency.max,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    seconds: result.duration,
  };
}

/**
 * Warm-up (not measured), then the measured run. `bodies`: JSON bodies sent in turn (POST);
 * `warmupBodies` defaults to `bodies`. Returns the measured run's figures.
 */
export async function measure({ tool, url, method = 'GET', auth, bodies, warmupBodies, connections, durationS, warmupS }) {
  const run = tool === 'wrk' ? runWrk : runAutocannon;
  if (warmupS > 0) await run({ url, method, auth, bodies: warmupBodies ?? bodies, connections, durationS: warmupS });
  return { tool, connections, ...(await run({ url, method, auth, bodies, connections, durationS })) };
}
