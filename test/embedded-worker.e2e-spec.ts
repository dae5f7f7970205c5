/**
 * The embedded database's worker thread (EmbeddedPostgres): its lifecycle around requests and an
 * unexpected end:
 * - the worker answers one request at a time; a request sent while another is being answered waits
 *   for it. stop() during a dump (or dropConnections) waits too, rather than being refused as "busy"
 *   (stop() keeps its first promise, so a refusal would refuse every later stop() as well: the worker
 *   never terminated, the data directory's lock never released);
 * - once the worker has ended unexpectedly (a crash, an out-of-memory termination), stop() still
 *   settles and gives the data directory back, instead of posting `stop` to the dead worker and
 *   waiting for an answer that never comes (RelayApp.close() would hang, the lock stay held).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { EmbeddedPostgres } from '../src/database/embedded-postgres.js';

// The embedded database itself, whatever database the suite runs on: the PostgreSQL pass
// (TEST_DATABASE_URL) would run the very same again.
const onTheEmbeddedPass = process.env.TEST_DATABASE_URL ? describe.skip : describe;

onTheEmbeddedPass('the embedded database worker', () => {
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

  it('after the worker ended on its own, stop() settles and releases the data directory', async () => {
    const path = join(dir, 'pglite');
    const db = await EmbeddedPostgres.start({ path });
    const inner = db as unknown as { worker: Worker; lock: { release(): void } | null };
    const ended: number[] = [];
    db.onEnded((code) => ended.push(code));
    // the worker ends on its own (as after a crash)
    const exited = new Promise((r) => inner.worker.once('exit', r));
    await inner.worker.terminate();
    await exited;
    let again: EmbeddedPostgres | null = null;
    try {
      const outcome = await Promise.race([
        db.stop().then(
          () => 'stopped',
          (e: Error) => `rejected: ${e.message}`,
        ),
        new Promise((r) => setTimeout(() => r('still waiting after 5 s'), 5000)),
      ]);
      expect(outcome).not.toBe('still waiting after 5 s');
      // the service is told (main.ts exits on it, so that it is restarted)
      expect(ended).toHaveLength(1);
      // the directory can be opened again in this process
      again = await EmbeddedPostgres.start({ path });
    } finally {
      inner.lock?.release();
      await again?.stop();
    }
  }, 60_000);
});
