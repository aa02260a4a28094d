// Bindings that only the test pool has (vitest.config.ts `miniflare.bindings`).
declare namespace Cloudflare {
  interface Env {
    TEST_SCHEMA?: string;
    /** '1' when the workerd project shares one workerd per vitest worker (the default; '0' with TEST_ISOLATED_WORKERD=1, vitest.config.ts). */
    TEST_SHARED_WORKERD?: string;
    /** '1' under `vitest run`: each module is fetched from Vite once per worker (vitest.config.ts). */
    TEST_FETCH_MODULES_ONCE?: string;
    /** JSON of [{ page, markdown }]: the README and the docs pages with examples (scripts/readme-curls.mjs). */
    TEST_EXAMPLE_PAGES?: string;
  }
}

/** A message the tests' Email Service accepted (test/helpers/mail-recorder.worker.mjs). */
interface RecordedMail {
  from: { email: string; name: string };
  to: string;
  replyTo?: string;
  subject: string;
  text: string;
  html: string;
  headers: Record<string, string>;
  messageId: string;
}

declare namespace Cloudflare {
  interface Env {
    /** The tests' Email Service: what it accepted. */
    MAIL_RECORDER: {
      messages(to?: string): Promise<RecordedMail[]>;
    };
  }
}
