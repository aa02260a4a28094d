/** The progress feed on a clock and timers the test drives: throttling, order, the final state, heartbeats. */
import { describe, expect, it } from 'vitest';
import { ProgressFeed, type FeedTimers } from '../../src/durable-objects/progress-feed';

interface State {
  status: 'queued' | 'processing' | 'completed';
  lines: number;
}

/** Timers that fire only when the test advances the clock. */
function manualTimers() {
  let now = 0;
  let nextId = 1;
  const pending = new Map<number, { at: number; run: () => void; every?: number }>();
  const timers: FeedTimers = {
    now: () => now,
    setTimeout: (run, ms) => {
      const id = nextId++;
      pending.set(id, { at: now + ms, run });
      return id;
    },
    clearTimeout: (id) => void pending.delete(id as number),
    setInterval: (run, ms) => {
      const id = nextId++;
      pending.set(id, { at: now + ms, run, every: ms });
      return id;
    },
    clearInterval: (id) => void pending.delete(id as number),
  };
  function advance(ms: number) {
    const until = now + ms;
    for (;;) {
      const due = [...pending.entries()].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      const [id, timer] = due;
      now = timer.at;
      if (timer.every) timer.at += timer.every;
      else pending.delete(id);
      timer.run();
    }
    now = until;
  }
  return { timers, advance, pending };
}

function feed(timers: FeedTimers) {
  return new ProgressFeed<State>({
    minIntervalMs: 250,
    heartbeatMs: 15_000,
    isFinal: (s) => s.status === 'completed',
    encode: (s) => JSON.stringify(s),
    timers,
  });
}

/**
 * Collects what a stream has produced so far, as lines ('' for a heartbeat), and whether it ended.
 * Enqueued chunks reach the reader within one turn of the event loop (no time passes on the feed's
 * clock); a read still waiting after that is kept for the next call, so no chunk is lost.
 */
function collector(stream: ReadableStream<Uint8Array>) {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  const out = { lines: [] as string[], done: false };
  let buffer = '';
  let pending: Promise<ReadableStreamReadResult<Uint8Array>> | null = null;
  async function drain(): Promise<void> {
    for (;;) {
      pending ??= reader.read();
      const next = await Promise.race([pending, new Promise<null>((resolve) => setTimeout(() => resolve(null), 0))]);
      if (next === null) return;
      pending = null;
      if (next.done) {
        out.done = true;
        return;
      }
      buffer += decoder.decode(next.value, { stream: true });
      const parts = buffer.split('\n');
      buffer = parts.pop() ?? '';
      out.lines.push(...parts);
    }
  }
  return { out, drain, cancel: () => reader.cancel() };
}

describe('ProgressFeed', () => {
  it('sends the current state at once, then at most one state per 250 ms (the latest), and ends after the final state', async () => {
    const clock = manualTimers();
    const progress = feed(clock.timers);
    const { out, drain } = collector(progress.open({ status: 'queued', lines: 0 }));

    progress.publish({ status: 'processing', lines: 500 }); // sent at once: nothing sent for 250 ms
    for (let lines = 1000; lines <= 5000; lines += 500) progress.publish({ status: 'processing', lines }); // held back
    await drain();
    expect(out.lines.map((l) => JSON.parse(l).lines)).toEqual([0, 500]);

    clock.advance(250); // the interval ends: only the latest of the held-back states goes out
    await drain();
    expect(out.lines.map((l) => JSON.parse(l).lines)).toEqual([0, 500, 5000]);

    progress.publish({ status: 'processing', lines: 5500 });
    progress.publish({ status: 'completed', lines: 6000 }); // final: sent at once, then the end
    await drain();
    expect(out.lines.map((l) => JSON.parse(l))).toEqual([
      { status: 'queued', lines: 0 },
      { status: 'processing', lines: 500 },
      { status: 'processing', lines: 5000 },
      { status: 'completed', lines: 6000 },
    ]);
    expect(out.done).toBe(true);
    expect(progress.readers).toBe(0);
    expect(clock.pending.size).toBe(0); // no timer left behind
  });

  it('a stream opened on a final state holds that state and ends', async () => {
    const progress = feed(manualTimers().timers);
    const text = await new Response(progress.open({ status: 'completed', lines: 10 })).text();
    expect(text).toBe('{"status":"completed","lines":10}\n');
    expect(progress.readers).toBe(0);
  });

  it('keeps idle streams open with a blank line every 15 s, and stops when the last reader leaves', async () => {
    const clock = manualTimers();
    const progress = feed(clock.timers);
    const { out, drain, cancel } = collector(progress.open({ status: 'queued', lines: 0 }));
    clock.advance(30_000);
    await drain();
    expect(out.lines).toEqual(['{"status":"queued","lines":0}', '', '']);
    await cancel();
    expect(progress.readers).toBe(0);
    expect(clock.pending.size).toBe(0);
    // Publishing with no reader does nothing (and schedules nothing).
    progress.publish({ status: 'processing', lines: 1 });
    expect(clock.pending.size).toBe(0);
  });

  it('does not send a state a reader already has', async () => {
    const clock = manualTimers();
    const progress = feed(clock.timers);
    const { out, drain } = collector(progress.open({ status: 'processing', lines: 500 }));
    progress.publish({ status: 'processing', lines: 500 });
    progress.publish({ status: 'completed', lines: 1000 });
    await drain();
    expect(out.lines).toEqual(['{"status":"processing","lines":500}', '{"status":"completed","lines":1000}']);
    expect(out.done).toBe(true);
  });
});
