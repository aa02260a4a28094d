// Scenario 1: GET /healthz, the ceiling of this runtime on this machine (no auth, no storage).
import { measure } from '../load.mjs';

export const baselineScenarios = [
  {
    name: 'healthz',
    group: 'baseline',
    async run(ctx) {
      const { settings } = ctx;
      const result = await measure({
        tool: settings.tool,
        url: `${ctx.url}/healthz`,
        connections: settings.connections,
        durationS: settings.durationS,
        warmupS: settings.warmupS,
      });
      return [{ scenario: 'healthz', unit: 'req/s', ...result, note: 'GET /healthz: no auth, no storage' }];
    },
  },
];
