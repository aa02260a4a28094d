// Scenario 1: GET /healthz, the ceiling of this runtime on this machine (no auth, no storage).
import { measure } from '../load.mjs';

export const baselineScenarios = [
  {
    name: 'healthz',
    group: 'baseline',
    async run(ctx) {
      const { settings } = ctx;
      ctx.rss.reset();
      const result = await measure({
        tool: settings.tool,
        url: `${ctx.url}/healthz`,
        connections: settings.connections,
        durationS: settings.durationS,
        warmupS: settings.warmupS,
      });
      const first = !ctx.rows.some((r) => r.scenario === 'healthz');
      return [{
        scenario: first ? 'healthz' : 'healthz (again, at the end)',
        unit: 'req/s',
        ...result,
        peakRssMb: ctx.rss.peakMb(),
        ...(first ? {} : { ratioToBaseline: true }),
        note: first ? 'GET /healthz: no auth, no storage (the baseline)' : 'the baseline again: drift of the machine during the run',
      }];
    },
  },
];
