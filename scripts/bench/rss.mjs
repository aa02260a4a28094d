// Peak resident memory of the workerd processes, sampled from /proc/<pid>/status (VmRSS) every
// 100 ms. Linux only; elsewhere the figures are reported as unavailable.
import { readdirSync, readFileSync } from 'node:fs';

function rssKb(pid) {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

/** Sums VmRSS over `pids()` (re-read each tick: workerd may restart) and keeps the peak since reset(). */
export class RssSampler {
  #pids;
  #timer;
  #peakKb = 0;
  #lastKb = 0;
  #samples = 0;

  constructor(pids, intervalMs = 100) {
    this.#pids = pids;
    this.available = process.platform === 'linux';
    this.intervalMs = intervalMs;
  }

  start() {
    if (!this.available) return this;
    this.#tick();
    this.#timer = setInterval(() => this.#tick(), this.intervalMs);
    this.#timer.unref();
    return this;
  }

  stop() {
    clearInterval(this.#timer);
  }

  /** Starts a new window: the peak restarts from the current value. */
  reset() {
    this.#tick();
    this.#peakKb = this.#lastKb;
    this.#samples = 0;
    return this.currentMb();
  }

  currentMb() {
    return this.available ? this.#lastKb / 1024 : null;
  }

  peakMb() {
    this.#tick();
    return this.available ? this.#peakKb / 1024 : null;
  }

  samples() {
    return this.#samples;
  }

  #tick() {
    const kb = this.#pids().reduce((sum, pid) => sum + rssKb(pid), 0);
    this.#lastKb = kb;
    this.#samples += 1;
    if (kb > this.#peakKb) this.#peakKb = kb;
  }
}

/**
 * CPU time (user + system, ms) consumed so far by the processes `pids` (/proc/<pid>/stat, in clock
 * ticks of 10 ms on Linux); null elsewhere. For workerd this is everything it runs: the Worker's
 * isolate, and the local simulators of D1, KV, R2, queues and Durable Objects.
 */
export function cpuMsOf(pids) {
  if (process.platform !== 'linux') return null;
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // Fields 14 and 15 of stat (utime, stime) are the 12th and 13th after the command name.
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // Gone meanwhile.
    }
  }
  return ticks * 10;
}

/**
 * Scheduler statistics of every thread of `pids` (/proc/<pid>/task/<tid>/schedstat): time on a
 * core and time runnable but waiting for one, in ns; null elsewhere. On a shared machine a
 * profiler's samples count the waits as well as the work.
 */
export function schedstatOf(pids) {
  if (process.platform !== 'linux') return null;
  let runNs = 0;
  let waitNs = 0;
  for (const pid of pids) {
    let tasks = [];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks) {
      try {
        const [run, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').trim().split(/\s+/).map(Number);
        runNs += run;
        waitNs += wait;
      } catch {
        // The thread ended meanwhile.
      }
    }
  }
  return { runNs, waitNs };
}
