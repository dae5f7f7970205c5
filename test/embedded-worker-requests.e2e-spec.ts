/**
 * The worker answers one request at a time (EmbeddedPostgres.ask): a request sent while another is
 * being answered waits for it. stop() during a dump (or dropConnections) used to be refused as
 * "busy", and since stop() kept its first promise, every later stop() too: the worker was never
 * terminated and the data directory's lock never released. (Found by review.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { EmbeddedPostgres } from '../src/database/embedded-postgres.js';

describe('requests to the worker, one after the other', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'relay-embedded-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('stop() during a dump still stops the database', async () => {
    const path = join(dir, 'pglite');
    const db = await EmbeddedPostgres.start({ path });
    const inner = db as unknown as { worker: Worker; lock: { release(): void } | null };
    const dump = db.dumpDataDir().then(
      () => 'dumped',
      (e: Error) => `dump rejected: ${e.message}`,
    );
    const first = await db.stop().then(
      () => 'stopped',
      (e: Error) => `rejected: ${e.message}`,
    );
    const second = await db.stop().then(
      () => 'stopped',
      (e: Error) => `rejected: ${e.message}`,
    );

    try {
      expect({ dump: await dump, first, second }).toEqual({ dump: 'dumped', first: 'stopped', second: 'stopped' });
    } finally {
      inner.lock?.release();
      await inner.worker.terminate();
    }
  }, 60_000);
});
