/**
 * Gathers calls made close together into one bulk call, as DataLoader does: every call made
 * before the pending ones are flushed (on the next turn of the event loop) goes into a single
 * `flush(items)`, whose answers are handed back in order. This lets a one-item interface (one
 * charge, one lookup) cost one storage round trip for a whole chunk of rows.
 */
export function coalesce<I, O>(flush: (items: I[]) => Promise<O[]>): (item: I) => Promise<O> {
  let pending: { item: I; resolve: (answer: O) => void; reject: (error: unknown) => void }[] = [];

  const run = async () => {
    const batch = pending;
    pending = [];
    try {
      const answers = await flush(batch.map((entry) => entry.item));
      if (answers.length !== batch.length) throw new Error(`flush answered ${answers.length} of ${batch.length} items`);
      batch.forEach((entry, i) => entry.resolve(answers[i] as O));
    } catch (err) {
      for (const entry of batch) entry.reject(err);
    }
  };

  return (item) =>
    new Promise<O>((resolve, reject) => {
      // A timer rather than a microtask: callers that await once or twice before calling still share the flush.
      if (pending.length === 0) setTimeout(() => void run(), 0);
      pending.push({ item, resolve, reject });
    });
}
