/**
 * An offer written while a catalog write changes one of its sources (issue 32): whichever commits
 * first, the offer ends valued from the source's new state. The PUT holds its sources' SKU rows
 * (FOR SHARE) in its transaction, so a catalog write of one of them waits for it and then values the
 * new offer itself; a PUT that meets a catalog write in progress waits for it and reads what it wrote.
 * On PostgreSQL the second writer is seen waiting for the first's lock (waitsForLock: the race
 * happened); PGlite runs one transaction at a time, so there the second waits in any case.
 */
import { jest } from '@jest/globals';
import { OfferValuation } from '../src/offers/offer-valuation.service.js';
import { OfferRepository } from '../src/offers/offer.repository.js';
import { useAppSuite } from './support/app-suite.js';
import { waitsForLock } from './support/db-waits.js';
import { waitFor } from './support/wait.js';

interface Held {
  reached: Promise<void>;
  release: () => void;
}

/** Holds the next call of `obj[method]` after it did its work, until released. */
function holdAfter<T extends object>(obj: T, method: keyof T & string): Held & { restore: () => void } {
  let reached!: () => void;
  let release!: () => void;
  const reachedP = new Promise<void>((r) => (reached = r));
  const gate = new Promise<void>((r) => (release = r));
  const original = (obj[method] as (...args: unknown[]) => Promise<unknown>).bind(obj);
  const spy = jest.spyOn(obj, method as never).mockImplementationOnce((async (...args: unknown[]) => {
    const result = await original(...args);
    reached();
    await gate;
    return result;
  }) as never);
  return { reached: reachedP, release, restore: () => spy.mockRestore() };
}

describe('offers and catalog writes at once', () => {
  const suite = useAppSuite({ seed: true });
  const http = () => suite.app.http;

  const startSync = async () => {
    const started = await http().post('/internal/catalog/sync', { mode: 'incremental' });
    expect(started.status).toBe(202);
    const runId = (started.data as { run_id: string }).run_id;
    return waitFor(
      async () => ((await http().get(`/internal/catalog/sync-runs/${runId}`)).data as { run: { status: string } }).run,
      (r) => r.status !== 'running',
      'the sync',
    );
  };
  const skuOf = (skip: number) => {
    const { product, sku } = suite.sandbox.catalog.findSku({ stockStatus: 'in_stock', skip })!;
    return { key: `${product.id}:${sku.sku_code}`, code: sku.sku_code };
  };
  const offerOf = async (code: string) => (await http().get(`/internal/offers/${code}`)).data.offer as { available: boolean };

  it('a PUT during a catalog write that takes its source out of stock waits for it, and stores the offer unavailable', async () => {
    const sku = skuOf(0);
    suite.sandbox.catalog.setStock(sku.code, 'out_of_stock');
    const held = holdAfter(suite.app.relay.app.get(OfferValuation), 'refreshForSkus');
    try {
      const sync = startSync();
      await held.reached; // the SKU is written out of stock, not committed
      const put = http().put('/internal/offers/race-1', { routing: 'priority', sources: [{ supplier: 'main', sku_key: sku.key }] });
      await waitsForLock(suite.db, put, 'the PUT');
      held.release();
      expect(await sync).toMatchObject({ status: 'succeeded' });
      expect((await put).status).toBe(201);
    } finally {
      held.release();
      held.restore();
    }
    expect(await offerOf('race-1')).toMatchObject({ available: false });
  });

  it('a catalog write during a PUT waits for it, and values the new offer unavailable', async () => {
    const sku = skuOf(1);
    const held = holdAfter(suite.app.relay.app.get(OfferRepository), 'save');
    try {
      const put = http().put('/internal/offers/race-2', { routing: 'priority', sources: [{ supplier: 'main', sku_key: sku.key }] });
      await held.reached; // the offer is written available, not committed
      suite.sandbox.catalog.setStock(sku.code, 'out_of_stock');
      const sync = startSync();
      await waitsForLock(suite.db, sync, 'the catalog write');
      held.release();
      expect((await put).status).toBe(201);
      expect(await sync).toMatchObject({ status: 'succeeded' });
    } finally {
      held.release();
      held.restore();
    }
    expect(await offerOf('race-2')).toMatchObject({ available: false });
  });
});
