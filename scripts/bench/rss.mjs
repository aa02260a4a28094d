// Peak resident memory of the workerd processes, sampled from /proc/<pid>/status (VmRSS) every
// 100 ms. Linux only; elsewhere the figures are reported as unavailable.
import { readFileSync } from 'node:fs';

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
