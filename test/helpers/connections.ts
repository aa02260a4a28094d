/**
 * Outgoing connections as production runs them, on a clock the test moves. An invocation may have
 * WORKERS.simultaneousConnections (6) open at once; a fetch beyond them is not refused but waits,
 * unsent, for one to close (src/lib/platform-limits.ts). Miniflare opens them all at once, so code
 * that starts ten requests each with a 10 s timer looks fine locally and, in production, times out
 * the four that waited. This network keeps that rule, answers each request a set time after it was
 * really sent, and fires time limits on its own clock.
 *
 * `run(work, idle)` moves the clock from event to event (an answer, a time limit), each time once
 * the code under test has nothing left but waiting on this network (`idle` resolves when its other
 * I/O, real D1 or queues, has settled: see InvocationMeter.inFlight).
 */
import { WORKERS } from '../../src/lib/platform-limits';

export interface SentRequest {
  url: string;
  /** Virtual ms: when the request was handed to fetch, and when a connection was free to send it. */
  calledAt: number;
  sentAt: number;
  /** Virtual ms when it ended, and how: an answer, or its signal aborted first. */
  endedAt: number | null;
  outcome: 'answered' | 'aborted' | null;
}

interface Event {
  at: number;
  seq: number;
  fire: () => void;
}

export class SimulatedConnections {
  now = 0;
  open = 0;
  peakOpen = 0;
  readonly requests: SentRequest[] = [];
  readonly #waiting: (() => void)[] = [];
  #events: Event[] = [];
  #seq = 0;

  constructor(
    /** How long the receiver at `url` takes to answer once the request is sent (virtual ms), and with what status. */
    readonly receiver: (url: string) => { afterMs: number; status: number },
    readonly limit: number = WORKERS.simultaneousConnections,
  ) {}

  /** Requests that had to wait for a connection. */
  queued(): SentRequest[] {
    return this.requests.filter((request) => request.sentAt > request.calledAt);
  }

  fetch = async (url: string, init: RequestInit): Promise<Response> => {
    const request: SentRequest = { url, calledAt: this.now, sentAt: this.now, endedAt: null, outcome: null };
    this.requests.push(request);
    const signal = init.signal ?? null;
    if (this.open >= this.limit) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    // A request whose time ran out while it waited is never sent.
    if (signal?.aborted) {
      this.#release();
      request.endedAt = this.now;
      request.outcome = 'aborted';
      throw signal.reason;
    }
    this.open++;
    this.peakOpen = Math.max(this.peakOpen, this.open);
    request.sentAt = this.now;
    const { afterMs, status } = this.receiver(url);
    try {
      return await new Promise<Response>((resolve, reject) => {
        const answer = this.#schedule(this.now + afterMs, () => {
          request.outcome = 'answered';
          resolve(new Response(null, { status }));
        });
        signal?.addEventListener(
          'abort',
          () => {
            if (request.outcome !== null) return;
            this.#events = this.#events.filter((event) => event !== answer);
            request.outcome = 'aborted';
            reject(signal.reason);
          },
          { once: true },
        );
      });
    } finally {
      request.endedAt = this.now;
      this.open--;
      this.#release();
    }
  };

  /** A signal that aborts with a TimeoutError `ms` after it is made, on this network's clock. */
  timeoutSignal = (ms: number): AbortSignal => {
    const controller = new AbortController();
    this.#schedule(this.now + ms, () => controller.abort(new DOMException('The operation timed out.', 'TimeoutError')));
    return controller.signal;
  };

  /** Runs `work` to its end, moving the clock whenever everything else has settled. */
  async run<T>(work: Promise<T>, idle: () => Promise<void>): Promise<T> {
    let done = false;
    const settled = work.then(
      () => (done = true),
      () => (done = true),
    );
    for (let idleRounds = 0; ; ) {
      await idle();
      if (done) break;
      const next = this.#events.sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!next) {
        // Nothing scheduled: the code is still busy with something else; look again.
        if (++idleRounds > 200) throw new Error('the work waits on nothing this network can answer');
        continue;
      }
      idleRounds = 0;
      this.now = next.at;
      const due = this.#events.filter((event) => event.at === next.at);
      this.#events = this.#events.filter((event) => event.at !== next.at);
      for (const event of due) event.fire();
    }
    await settled;
    return work;
  }

  #schedule(at: number, fire: () => void): Event {
    const event = { at, seq: this.#seq++, fire };
    this.#events.push(event);
    return event;
  }

  #release(): void {
    this.#waiting.shift()?.();
  }
}

/** Resolves once `inFlight()` has read 0 for several turns of the event loop in a row. */
export async function settledIo(inFlight: () => number, turns = 5): Promise<void> {
  for (let quiet = 0; quiet < turns; ) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    quiet = inFlight() === 0 ? quiet + 1 : 0;
  }
}
