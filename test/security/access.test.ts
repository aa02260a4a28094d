/**
 * Access over every endpoint: no key, a key that does not exist, the public key where a secret one
 * is required, a revoked key, another merchant's resource, and the admin token. The table in
 * test/helpers/endpoints.ts must list every route the app serves.
 */
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { app } from '../../src/app';
import { ADMIN_TOKEN, call } from '../helpers/api';
import { buildWorld, endpoints, request, type Endpoint, type World } from '../helpers/endpoints';
import { expectFailedEnvelope } from '../helpers/fuzz';

let world: World;
beforeAll(async () => {
  world = await buildWorld();
});

const NO_SUCH_SECRET_KEY = 'api_' + 'A'.repeat(32);

it('the endpoint table covers every route the app serves (the console\'s, by cookie, in console.test.ts)', () => {
  const served = new Set(
    app.routes
      .filter((route) => route.method !== 'ALL' && !route.path.startsWith('/console/'))
      .map((route) => `${route.method} ${route.path}`),
  );
  expect(endpoints.map((endpoint) => endpoint.route).sort()).toEqual([...served].sort());
});

async function expect401(response: Response): Promise<void> {
  expect(response.status).toBe(401);
  await expectFailedEnvelope(response);
}

const guarded = endpoints.filter((endpoint) => endpoint.auth !== 'none');

describe.each(guarded)('$route', (endpoint: Endpoint) => {
  it('no Authorization header: 401', async () => {
    await expect401(await request(endpoint, world, null));
  });

  it('a well-formed key that was never issued: 401', async () => {
    await expect401(await request(endpoint, world, NO_SUCH_SECRET_KEY));
  });

  if (endpoint.auth === 'secret') {
    it("the merchant's public key where the secret key is required: 401", async () => {
      await expect401(await request(endpoint, world, world.owner.publicKey));
    });
  }

  if (endpoint.auth === 'secret' || endpoint.auth === 'any') {
    it('a revoked key (used once before, so cached): 401', async () => {
      await expect401(await request(endpoint, world, world.revoked.secretKey));
      if (endpoint.auth === 'any') await expect401(await request(endpoint, world, world.revoked.publicKey));
    });
  }

  if (endpoint.auth === 'admin') {
    it("a merchant's secret key and wrong admin tokens of equal and other length: 401", async () => {
      const sameLength = 'x'.repeat(ADMIN_TOKEN.length);
      const almost = ADMIN_TOKEN.slice(0, -1) + (ADMIN_TOKEN.endsWith('n') ? 'm' : 'n');
      for (const token of [world.owner.secretKey, sameLength, almost, ADMIN_TOKEN + 'x', ADMIN_TOKEN.slice(0, 4)]) {
        await expect401(await request(endpoint, world, token));
      }
    });
  }

  if (endpoint.owned) {
    it(`another merchant's resource: ${endpoint.crossStatus ?? 404}, as if it did not exist`, async () => {
      const response = await request(endpoint, world, world.intruder.secretKey);
      expect(response.status).toBe(endpoint.crossStatus ?? 404);
      const body = await expectFailedEnvelope(response);
      // The refusal must not tell the intruder whose resource it is.
      expect(body.msg).not.toContain(world.owner.id);
      expect(body.msg).not.toContain(world.owner.name);
    });
  }

  it(`the rightful caller succeeds (${endpoint.okStatus}), so the refusals above are about access`, async () => {
    const key =
      endpoint.auth === 'admin' ? ADMIN_TOKEN : endpoint.auth === 'any' ? world.owner.publicKey : world.owner.secretKey;
    const response = await request(endpoint, world, endpoint.auth === 'none' ? null : key);
    expect(response.status, await response.clone().text()).toBe(endpoint.okStatus);
    await response.body?.cancel();
  });
});

describe('admin token comparison', () => {
  it('goes through a constant-time comparison for right and wrong tokens alike', async () => {
    const timingSafeEqual = vi.spyOn(crypto.subtle, 'timingSafeEqual');
    try {
      const get = endpoints.find((endpoint) => endpoint.route === 'GET /admin/merchants/:id');
      if (!get) throw new Error('table lost GET /admin/merchants/:id');
      await expect401(await request(get, world, 'y'.repeat(ADMIN_TOKEN.length)));
      await expect401(await request(get, world, 'short'));
      const ok = await request(get, world, ADMIN_TOKEN);
      expect(ok.status).toBe(200);
      await ok.body?.cancel();
      expect(timingSafeEqual).toHaveBeenCalledTimes(3);
    } finally {
      timingSafeEqual.mockRestore();
    }
  });
});

describe('cross-merchant isolation of temp tokens', () => {
  it("another merchant's temp token reads as unknown in the vault and the lookup; the owner's use still works", async () => {
    const own = await call('POST', '/api/vault/customer', { key: world.intruder.secretKey, body: { id: 'intrudercust' } });
    expect(own.status).toBe(201);
    await own.body?.cancel();
    const stolen = await call('POST', '/api/vault/customer/intrudercust/card', {
      key: world.intruder.secretKey,
      body: { temp_token: world.tempToken },
    });
    expect(stolen.status).toBe(400);
    expect((await expectFailedEnvelope(stolen)).msg).toBe('card.temp_token: unknown or expired token');
    const looked = await call('POST', '/api/lookup/bin/protected', { key: world.intruder.secretKey, body: { temp_token: world.tempToken } });
    expect(looked.status).toBe(400);
    expect((await expectFailedEnvelope(looked)).msg).toBe('temp_token: unknown or expired token');
    const mine = await call('POST', `/api/vault/customer/${world.customerId}/card`, {
      key: world.owner.secretKey,
      body: { temp_token: world.tempToken },
    });
    expect(mine.status).toBe(201);
    await mine.body?.cancel();
  });
});

describe('cross-merchant isolation of listings', () => {
  it("another merchant's batch list does not show the owner's batch", async () => {
    const listed = async (key: string) => {
      const response = await call('GET', '/api/filebatch?limit=100', { key });
      expect(response.status).toBe(200);
      return (await response.json<{ data: { id: string }[] }>()).data.map((batch) => batch.id);
    };
    expect(await listed(world.owner.secretKey)).toContain(world.batchId);
    expect(await listed(world.intruder.secretKey)).not.toContain(world.batchId);
  });
});
