/**
 * What one invocation spends against the limits Miniflare does not enforce: a wrapped `env` counts
 * every subrequest the code makes through it (KV, R2, D1, Queues and Durable Object calls; D1
 * statements also on their own, for D1's limit of queries per invocation) and measures the answer
 * of every Durable Object RPC against the 32 MiB limit. Hand the wrapped env to the Worker's own
 * handler (`worker.fetch(request, meter.env, ctx)`, the queue or the cron) and compare the totals
 * with src/lib/platform-limits.ts.
 *
 * The RPC size is an estimate of V8's serialization (what workerd measures): strings at one byte a
 * character when they are Latin-1, two otherwise, numbers 8, containers their contents plus a few
 * bytes a property. Streams are not counted: they flow, they are not part of the payload.
 */
export interface RpcAnswer {
  binding: string;
  method: string;
  bytes: number;
}

export interface InvocationMeter<E extends object> {
  env: E;
  /** Every call that leaves the isolate, by binding. */
  subrequests: Map<string, number>;
  /** D1 statements (a batch counts each of its statements). */
  d1Statements: number;
  rpcAnswers: RpcAnswer[];
  /** Calls made and not yet answered (a test that drives time itself waits for this to be 0). */
  inFlight: number;
  totalSubrequests(): number;
  largestRpcAnswer(): number;
}

type AnyFunction = (...args: unknown[]) => unknown;

const has = (value: unknown, ...methods: string[]): boolean =>
  typeof value === 'object' && value !== null && methods.every((method) => typeof (value as Record<string, unknown>)[method] === 'function');

export function meterInvocation<E extends object>(env: E): InvocationMeter<E> {
  const subrequests = new Map<string, number>();
  const rpcAnswers: RpcAnswer[] = [];
  const meter: InvocationMeter<E> = {
    env: env,
    subrequests,
    d1Statements: 0,
    rpcAnswers,
    inFlight: 0,
    totalSubrequests: () => [...subrequests.values()].reduce((sum, n) => sum + n, 0),
    largestRpcAnswer: () => Math.max(0, ...rpcAnswers.map((answer) => answer.bytes)),
  };
  const count = (binding: string) => {
    subrequests.set(binding, (subrequests.get(binding) ?? 0) + 1);
    // Called as the call starts; the answer is tracked by `pending` below.
    return (answer: unknown): unknown => {
      if (!(answer instanceof Promise)) return answer;
      meter.inFlight++;
      return answer.finally(() => meter.inFlight--);
    };
  };
  const wrapped = new Map<PropertyKey, unknown>();

  meter.env = new Proxy(env, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof property !== 'string') return value;
      if (wrapped.has(property)) return wrapped.get(property);
      let wrap: unknown = value;
      if (has(value, 'prepare', 'batch')) wrap = meterD1(value as D1Database, property, count, () => meter.d1Statements++);
      else if (has(value, 'getWithMetadata')) wrap = meterCalls(value as object, property, count);
      else if (has(value, 'createMultipartUpload')) wrap = meterR2(value as R2Bucket, property, count);
      else if (has(value, 'sendBatch', 'send')) wrap = meterCalls(value as object, property, count);
      else if (has(value, 'idFromName', 'get')) wrap = meterNamespace(value as DurableObjectNamespace, property, count, rpcAnswers);
      wrapped.set(property, wrap);
      return wrap;
    },
  });
  return meter;
}

/** Every method call on the object is one subrequest. */
type Count = (binding: string) => (answer: unknown) => unknown;

function meterCalls<T extends object>(target: T, binding: string, count: Count): T {
  return new Proxy(target, {
    get(inner, property, receiver) {
      const value: unknown = Reflect.get(inner, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => count(binding)((value as AnyFunction).apply(inner, args));
    },
  });
}

function meterR2(bucket: R2Bucket, binding: string, count: Count): R2Bucket {
  return new Proxy(bucket, {
    get(inner, property, receiver) {
      const value: unknown = Reflect.get(inner, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const answer = count(binding)((value as AnyFunction).apply(inner, args));
        // A multipart upload's parts and completion are calls of their own.
        if (property === 'createMultipartUpload') {
          return Promise.resolve(answer).then((upload) => meterCalls(upload as R2MultipartUpload, binding, count));
        }
        if (property === 'resumeMultipartUpload') return meterCalls(answer as R2MultipartUpload, binding, count);
        return answer;
      };
    },
  });
}

function meterD1(db: D1Database, binding: string, count: Count, statement: () => void): D1Database {
  const real = new WeakMap<object, D1PreparedStatement>();
  const wrapStatement = (inner: D1PreparedStatement): D1PreparedStatement => {
    const proxy = new Proxy(inner, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        if (property === 'bind') return (...args: unknown[]) => wrapStatement((value as AnyFunction).apply(target, args) as D1PreparedStatement);
        return (...args: unknown[]) => {
          statement();
          return count(binding)((value as AnyFunction).apply(target, args));
        };
      },
    });
    real.set(proxy, inner);
    return proxy;
  };
  return new Proxy(db, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (property === 'prepare') return (query: string) => wrapStatement(target.prepare(query));
      if (property === 'batch') {
        return (statements: D1PreparedStatement[]) => {
          for (let i = 0; i < statements.length; i++) statement();
          return count(binding)(target.batch(statements.map((s) => real.get(s) ?? s)));
        };
      }
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        statement();
        return count(binding)((value as AnyFunction).apply(target, args));
      };
    },
  });
}

function meterNamespace(namespace: DurableObjectNamespace, binding: string, count: Count, answers: RpcAnswer[]): DurableObjectNamespace {
  const wrapStub = (stub: DurableObjectStub): DurableObjectStub =>
    new Proxy(stub, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof property !== 'string' || property === 'then' || property === 'id' || property === 'name') return value;
        return (...args: unknown[]) =>
          count(binding)(
            (async () => {
              const answer: unknown = await (target as unknown as Record<string, AnyFunction>)[property]?.(...args);
              answers.push({ binding, method: property, bytes: serializedBytes(answer) });
              return answer;
            })(),
          );
      },
    });
  return new Proxy(namespace, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (property === 'getByName' || property === 'get') {
        return (...args: unknown[]) => wrapStub((value as AnyFunction).apply(target, args) as DurableObjectStub);
      }
      return typeof value === 'function' ? (value as AnyFunction).bind(target) : value;
    },
  });
}

/** An estimate of the bytes V8's serializer writes for `value` (see the header). */
export function serializedBytes(value: unknown, seen: Set<object> = new Set()): number {
  if (value === null || value === undefined || typeof value === 'boolean') return 1;
  if (typeof value === 'number' || typeof value === 'bigint') return 9;
  if (typeof value === 'string') return 5 + (/^[\u0000-\u00ff]*$/.test(value) ? value.length : value.length * 2);
  if (typeof value !== 'object') return 1;
  if (value instanceof ReadableStream) return 0;
  if (seen.has(value)) return 5;
  seen.add(value);
  if (value instanceof Date) return 9;
  if (ArrayBuffer.isView(value)) return 10 + value.byteLength;
  if (value instanceof ArrayBuffer) return 5 + value.byteLength;
  if (value instanceof Map) return 5 + [...value].reduce((sum, [k, v]) => sum + serializedBytes(k, seen) + serializedBytes(v, seen), 0);
  if (value instanceof Set) return 5 + [...value].reduce((sum, v) => sum + serializedBytes(v, seen), 0);
  if (Array.isArray(value)) return 5 + value.reduce((sum: number, v: unknown) => sum + serializedBytes(v, seen), 0);
  return 5 + Object.entries(value).reduce((sum, [k, v]) => sum + serializedBytes(k, seen) + serializedBytes(v, seen), 0);
}
