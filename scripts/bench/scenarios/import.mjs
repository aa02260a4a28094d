// Scenario 5: the whole BIN dataset through `npm run bins:import` (scripts/bins-import.mjs) against
// the bench server: wall time of the script, rows/s. The lookup scenarios need the data, so this
// also runs (unreported) when only `lookup` or `batch` is asked for.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { localEnv } from '../../local-state.mjs';
import { EndpointMissing } from '../http.mjs';
import { binDataset, readBins } from '../dataset.mjs';

function runImport(root, dir, url, token) {
  return new Promise((resolveRun, reject) => {
    // What `npm run bins:import -- <dir> --url ... --token ...` runs, without npm's own start-up time.
    const child = spawn(process.execPath, [join(root, 'scripts', 'bins-import.mjs'), dir, '--url', url, '--token', token], {
      cwd: root, env: localEnv, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolveRun(out) : reject(new Error(`bins:import exited ${code}: ${out.trim().split('\n').pop()}`))));
  });
}

export const importScenarios = [
  {
    name: 'import',
    group: 'import',
    needed: (groups) => groups.has('lookup') || groups.has('batch') || groups.has('contention') || groups.has('fairness'),
    async run(ctx) {
      if (!existsSync(join(ctx.root, 'scripts', 'bins-import.mjs'))) throw new EndpointMissing('scripts/bins-import.mjs');
      const dataset = binDataset(ctx.root, ctx.server.dir);
      ctx.data.bins = readBins(dataset.dir);
      ctx.rss.reset();
      const started = performance.now();
      const out = await runImport(ctx.root, dataset.dir, ctx.url, ctx.adminToken);
      const seconds = (performance.now() - started) / 1000;
      const done = /Done: ([\d,]+) rows imported, (\d+) skipped, (\d+) requests/.exec(out);
      const imported = done ? Number(done[1].replace(/,/g, '')) : NaN;
      ctx.log(`import: ${out.trim().split('\n').filter((l) => l.startsWith('Done')).join(' ')}`);
      return [{
        scenario: 'import (bins:import)',
        unit: 'rows/s',
        rate: imported / seconds,
        rows: imported,
        skipped: done ? Number(done[2]) : null,
        requests: done ? Number(done[3]) : null,
        seconds,
        peakRssMb: ctx.rss.peakMb(),
        note: `${imported.toLocaleString('en-US')} rows of ${dataset.source}, ${done?.[3]} requests`,
      }];
    },
  },
];
