/**
 * Tests that cause failures on purpose (a malformed queue message, a chunk that dies midway, a
 * stalled batch) make the service log at warn or error level. Those lines are the behaviour under
 * test, not noise: this captures them per test, so a green `npm test` prints none, and lets the
 * test assert the event it expects.
 */
import { afterEach, beforeEach } from 'vitest';
import { captureConsole } from './leak-scan';

export function captureLogsOfEachTest(): { events: () => string[] } {
  let capture: ReturnType<typeof captureConsole> | undefined;
  beforeEach(() => {
    capture = captureConsole();
  });
  afterEach(() => {
    capture?.restore();
    capture = undefined;
  });
  return {
    /** The `event` of every JSON log line of the current test, in order. */
    events: () =>
      (capture?.lines ?? []).flatMap((line) => {
        const json = line.slice(line.indexOf(': ') + 2);
        try {
          const event = (JSON.parse(json) as { event?: unknown }).event;
          return typeof event === 'string' ? [event] : [];
        } catch {
          return [];
        }
      }),
  };
}
