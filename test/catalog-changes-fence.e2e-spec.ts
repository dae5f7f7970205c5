/**
 * PostgreSQL only (TEST_DATABASE_URL). It failed (3–11 SKUs missed per reader) while the
 * `changed_since` fence was computed in the same statement as the rows, after that statement's
 * snapshot was taken; the fence is now read by a statement of its own first (WRITES_FENCE_SQL). A catalog write W that began
 * before another write W2 (older stamp) but commits between the reader's snapshot and its read of
 * pg_stat_activity is neither visible nor counted as open: the fence moves past W's stamp, the reader
 * gets W2's rows, moves its cursor past W's stamp, and W's rows are never returned.
 *
 * The test follows the catalog like a shop (cursor = newest updated_at seen, page_size 500, read
 * fast so that a poll never fills a page) while several order-style fresh reads write at once, each
 * product once, and checks that every changed SKU was returned.
 */
import { DataSource } from 'typeorm';
import { CatalogReadRepository } from '../src/catalog/catalog-read.repository.js';
import { CatalogService } from '../src/catalog/catalog.service.js';
import { useAppSuite } from './support/app-suite.js';
import { databaseMillisecondPassed } from './support/db-waits.js';
import { waitFor } from './support/wait.js';

const onServer = Boolean(process.env.TEST_DATABASE_URL);

(onServer ? describe : describe.skip)('changed_since fence vs. concurrent catalog writes (PostgreSQL)', () => {
  const suite = useAppSuite({ seed: true, sandbox: { catalog: { products: 1500, seed: 9 } } });

  it('a shop following changed_since misses no change while writes commit out of order', async () => {
    const { app, sandbox } = suite;
    const catalog = app.relay.app.get(CatalogService);
    const repo = app.relay.app.get(CatalogReadRepository);

    const products = sandbox.catalog.listedProducts();
    // after every stamp of the seeding sync, before every stamp of the writes below
    const cursor0 = await databaseMillisecondPassed(suite.db);

    const queue = products.map((p) => p.id);
    const changed = new Set<string>();
    let writing = true;
    const writer = async () => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
        const p = sandbox.catalog.getProduct(id)!;
        for (const s of p.skus) sandbox.catalog.setPrice(s.sku_code, (Number(s.price_amount) + 1.23).toFixed(2));
        await catalog.refreshProduct(id);
        for (const s of p.skus) changed.add(s.sku_code);
      }
    };

    // The same read with the fence taken by a statement of its own BEFORE the rows' statement (whose
    // snapshot then sees every write that the fence no longer counts as open): the control.
    const ds = app.relay.app.get(DataSource);
    const FENCE =
      `SELECT date_trunc('milliseconds', LEAST(statement_timestamp(), (SELECT min(a.xact_start) FROM pg_stat_activity a
      WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.application_name = ` +
      `current_setting('application_name')))) AS fence`;
    const fencedFirst = async (since: Date) => {
      const [{ fence }] = (await ds.query(FENCE)) as Array<{ fence: Date }>;
      const items = (await ds.query(
        'SELECT sku_code, updated_at FROM catalog_skus s WHERE s.updated_at > $1 AND s.updated_at < $2 ORDER BY s.updated_at, ' +
          's.sku_code LIMIT 500',
        [since, fence],
      )) as Array<{ sku_code: string; updated_at: Date }>;
      return { items };
    };

    let overflow = 0;
    // Once the writes are done, every reader finishes its poll in progress and waits here; the last
    // reads begin only when the database's clock is past every write's stamp, so that no fence (the
    // start of a read in progress on another connection included) hides a committed write.
    let caughtUp!: () => void;
    const lastReads = new Promise<void>((resolve) => (caughtUp = resolve));
    let following = 0;
    const reader = async (read: (since: Date) => Promise<{ items: Array<{ sku_code: string; updated_at: Date }> }>) => {
      let cursor = cursor0;
      const seen = new Set<string>();
      const poll = async () => {
        const { items } = await read(cursor);
        if (items.length === 500) overflow++;
        for (const s of items) {
          seen.add(s.sku_code);
          if (s.updated_at.getTime() > cursor.getTime()) cursor = new Date(s.updated_at);
        }
        return items.length;
      };
      following++;
      while (writing) await poll();
      following--;
      await lastReads;
      while ((await poll()) > 0);
      return seen;
    };

    const service = (since: Date) => repo.listSkus({ changedSince: since, offset: 0, limit: 500 });
    const readers = [reader(service), reader(service), reader(service), reader(fencedFirst), reader(fencedFirst), reader(fencedFirst)];
    await Promise.all(Array.from({ length: 8 }, writer));
    writing = false;
    await waitFor(
      () => following,
      (n) => n === 0,
      'every reader to end its poll in progress',
    );
    await databaseMillisecondPassed(suite.db);
    caughtUp();
    const seenBy = await Promise.all(readers);

    expect(overflow).toBe(0); // otherwise OFFSET paging (another finding) could explain a miss
    const missed = seenBy.map((seen) => [...changed].filter((c) => !seen.has(c)).length);
    // control (fence read first): nothing missed
    expect(missed.slice(3)).toEqual([0, 0, 0]);
    // the service's read
    expect(missed.slice(0, 3)).toEqual([0, 0, 0]);
  }, 240_000);
});
