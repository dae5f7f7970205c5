/**
 * The embedded database's data directory is opened by one process at a time (src/database/data-dir-lock.ts):
 * the service and the `relay` command as real processes on one DATA_DIR. A second opener is refused
 * before it writes anything; a lock left by a process killed with SIGKILL is taken over; of openers
 * racing, exactly one wins.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import axios from 'axios';
import pg from 'pg';
import { EmbeddedPostgres } from '../src/database/embedded-postgres.js';
import { nodeEntry, startChildApp, type ChildApp } from './support/child-app.js';
import { TEST_TOKEN, testEnv } from './support/test-app.js';

const RELAY = nodeEntry('cli/relay');
const LOCK = nodeEntry('database/data-dir-lock');
/** The service's entry file as the lock names its holder (`main.js` compiled, `main.ts` through the loader). */
const MAIN = basename(nodeEntry('main').file);

const listening = (l: Record<string, unknown>) => typeof l.msg === 'string' && l.msg.startsWith('upstream-relay listening');

interface Ran {
  code: number | null;
  out: string;
}

/**
 * A node process able to run `src/` modules (nodeEntry) with a clean environment; resolves with its exit code and output.
 * `started`, when given, gets the process at once, its stdin a pipe the caller ends.
 */
function runNode(args: string[], env: Record<string, string>, cwd: string, started?: (child: ChildProcess) => void): Promise<Ran> {
  const child = spawn(process.execPath, [...LOCK.nodeArgs, ...args], {
    cwd,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...LOCK.env, ...env },
    stdio: [started ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  started?.(child);
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, out })));
}

// Every process here opens its own embedded database under a scratch DATA_DIR, whatever database the
// suite runs on: the PostgreSQL pass (TEST_DATABASE_URL) would run the very same ~2 minutes again.
const onTheEmbeddedPass = process.env.TEST_DATABASE_URL ? describe.skip : describe;

onTheEmbeddedPass('one process at a time on an embedded data directory', () => {
  let scratch: string;
  let dataDir: string;
  let pgliteDir: string;
  let lockFile: string;
  let env: Record<string, string>;
  const children: ChildApp[] = [];

  /** The `relay` command (src/cli/relay.ts) as a process on the shared DATA_DIR. */
  const relay = (args: string[], extra: Record<string, string> = {}) => runNode([RELAY.file, ...args], { ...env, ...extra }, scratch);
  /** The service (src/main.ts) as a process on the shared DATA_DIR. */
  const service = (extra: Record<string, string> = {}) => {
    const child = startChildApp({ cwd: scratch, cleanEnv: true, env: { ...env, ...extra } });
    children.push(child);
    return child;
  };
  const holder = () => JSON.parse(readFileSync(lockFile, 'utf8')) as { pid: number; token: string };
  const appliedVersions = async (): Promise<string[]> => {
    const db = await EmbeddedPostgres.start({ path: pgliteDir });
    const client = new pg.Client(db.url);
    try {
      await client.connect();
      return (await client.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version')).rows.map((r) => r.version);
    } finally {
      await client.end();
      await db.stop();
    }
  };

  beforeAll(async () => {
    scratch = realpathSync(mkdtempSync(join(tmpdir(), 'relay-dir-lock-')));
    dataDir = join(scratch, 'data');
    pgliteDir = join(dataDir, 'pglite');
    lockFile = `${pgliteDir}.lock`;
    // The in-process sandbox upstream, the embedded database under DATA_DIR, no migrations at start.
    env = testEnv(null, { LOG_LEVEL: 'info', DATA_DIR: dataDir });
    // Creates the database, migrated.
    const created = await relay(['migrate']);
    expect(created).toMatchObject({ code: 0, out: expect.stringMatching(/^applied: /) });
    expect(existsSync(lockFile)).toBe(false);
  }, 120_000);
  afterEach(async () => {
    for (const c of children.splice(0)) await c.kill('SIGKILL');
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  // One service, started once on a directory with one migration reverted, serves the two tests that
  // only read it (the refused `relay` commands, the refused second service); the second of them stops it
  // and checks what it left behind: a free lock, and the pending migration still unapplied.
  describe('while a service holds the directory', () => {
    let svc: ChildApp;
    let url: string;
    let pending: string;
    beforeAll(async () => {
      const reverted = await relay(['migrate', '--down', '1']);
      expect(reverted.code).toBe(0);
      pending = /^reverted: (\d+)_/.exec(reverted.out)![1];
      svc = startChildApp({ cwd: scratch, cleanEnv: true, env });
      url = String((await svc.waitForLog(listening)).url);
    }, 120_000);
    afterAll(async () => {
      await svc?.kill('SIGKILL');
    });

    it('a relay command without --url refuses while the service holds the directory, exits 3 and writes nothing', async () => {
      expect(holder().pid).toBe(svc.process.pid);
      // The service did not migrate (DB_MIGRATE_ON_START=false): one migration is pending.
      expect((await axios.get(`${url}/health/ready`, { validateStatus: () => true })).status).toBe(503);

      // `wallet` would start an instance in its process and migrate at its start: refused before that.
      const wallet = await relay(['wallet'], { DB_MIGRATE_ON_START: 'true' });
      expect(wallet.code).toBe(3);
      expect(wallet.out).toContain(
        `relay: data_dir_locked: the embedded database ${pgliteDir} is in use by process ${svc.process.pid} (${MAIN}) on host `,
      );
      expect(wallet.out).toContain(`lock file ${lockFile}`);
      expect(wallet.out).toContain('--url http://HOST:PORT (or RELAY_URL); or stop that process first');
      const migrate = await relay(['migrate']);
      expect(migrate.code).toBe(3);
      expect(migrate.out).toContain(`data_dir_locked: the embedded database ${pgliteDir} is in use by process ${svc.process.pid}`);
      expect(migrate.out).toContain('stop that process first');
      // With --url the command uses the running service.
      const viaUrl = await relay(['wallet', '--url', url]);
      expect(viaUrl.code).toBe(0);
      expect(JSON.parse(viaUrl.out)).toMatchObject({ ok: true });

      // Still pending through the running service, which still holds its lock.
      expect((await axios.get(`${url}/health/ready`, { validateStatus: () => true })).status).toBe(503);
      expect(holder().pid).toBe(svc.process.pid);
    }, 180_000);

    it('a second service on one directory refuses to start; the first goes on, stopped leaves the lock free, nothing written', async () => {
      const second = service();
      expect(await second.exited).toBe(1);
      expect(second.output()).toContain(
        `upstream-relay: refusing to start, data_dir_locked: the embedded database ${pgliteDir} is in use by process ` +
          `${svc.process.pid} (${MAIN}) on host `,
      );
      expect(second.output()).toContain('stop that process first, or give this one another DATA_DIR or DATABASE_URL');
      expect(second.output()).not.toContain('upstream-relay listening');
      const health = await axios.get(`${url}/health`);
      expect(health.data).toMatchObject({ ok: true, database: 'up' });
      expect(holder().pid).toBe(svc.process.pid);

      expect(await svc.kill('SIGTERM')).toBe(0);
      expect(existsSync(lockFile)).toBe(false);
      // Neither the refused commands nor the refused service migrated the directory.
      expect(await appliedVersions()).not.toContain(pending);
      const up = await relay(['migrate']);
      expect(up).toMatchObject({ code: 0, out: expect.stringContaining(`applied: ${pending}_`) });
    }, 180_000);
  });

  it('the lock of a service killed with SIGKILL is taken over by the next one, which starts', async () => {
    const killed = service();
    await killed.waitForLog(listening);
    await killed.kill('SIGKILL');
    expect(holder().pid).toBe(killed.process.pid); // left behind

    const next = service();
    const url = String((await next.waitForLog(listening)).url);
    expect(holder().pid).toBe(next.process.pid);
    const wallet = await axios.get(`${url}/internal/wallet`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    expect(wallet.data).toMatchObject({ ok: true });
    expect(await next.kill('SIGTERM')).toBe(0);
    expect(existsSync(lockFile)).toBe(false);
  }, 180_000);

  it('of two services started together on a stale lock, exactly one starts', async () => {
    // A stale lock as a service killed with SIGKILL leaves it (the test above has a real one): written
    // by a process of this host, naming a pid that no longer runs.
    const dead = await runNode(['-e', 'console.log(process.pid)'], {}, scratch);
    const template = JSON.parse(readFileSync(await lockTemplate(pgliteDir), 'utf8')) as Record<string, unknown>;
    writeFileSync(lockFile, JSON.stringify({ ...template, pid: Number(dead.out.trim()), token: 'killedholder' }));
    const both = [service(), service()];
    const outcome = await Promise.all(
      both.map((c) =>
        c.waitForLog(listening).then(
          () => 'started',
          () => 'refused',
        ),
      ),
    );
    expect([...outcome].sort()).toEqual(['refused', 'started']);
    const winner = both[outcome.indexOf('started')];
    const loser = both[outcome.indexOf('refused')];
    expect(await loser.exited).toBe(1);
    expect(loser.output()).toContain(`data_dir_locked: the embedded database ${pgliteDir} is in use by process ${winner.process.pid}`);
    expect(holder().pid).toBe(winner.process.pid);
    expect(await winner.kill('SIGTERM')).toBe(0);
  }, 180_000);

  it('of eight openers racing for a free lock, then for a stale one, exactly one wins each time', async () => {
    const dir = join(scratch, 'race');
    const race = async () => {
      const at = Date.now() + 3_000; // all loaded by then, then all at once
      const script = `
        const { DataDirLock } = await import(process.argv[1]);
        // Each racer waits on a timer for the common instant (not spinning: eight spinning racers on
        // a small machine cost seconds of CPU each).
        await new Promise((r) => setTimeout(r, Math.max(0, Number(process.argv[3]) - Date.now())));
        try {
          const lock = await DataDirLock.acquire(process.argv[2]);
          console.log('won ' + lock.holder.token);
          // held until every other racer has tried: the test ends this stdin then
          process.stdin.on('end', () => process.exit(0)).resume();
        } catch (e) {
          console.log(e.code === 'data_dir_locked' ? 'refused' : 'error ' + e.stack);
          process.exit(3);
        }`;
      // A racer has tried once it printed its outcome (or ended); once all have, every stdin is ended.
      const children: ChildProcess[] = [];
      let tried = 0;
      const triedOnce = (child: ChildProcess) => {
        let counted = false;
        const count = () => {
          if (counted) return;
          counted = true;
          if (++tried === 8) for (const c of children) c.stdin?.end();
        };
        child.stdout?.on('data', (c: Buffer) => c.includes('\n') && count());
        child.on('exit', count);
      };
      const racers = Array.from({ length: 8 }, () =>
        runNode(['--input-type=module', '-e', script, LOCK.url, dir, String(at)], {}, scratch, (child) => {
          children.push(child);
          triedOnce(child);
        }),
      );
      return Promise.all(racers);
    };

    const free = await race();
    expect(free.map((r) => r.out.trim().split(' ')[0]).sort()).toEqual([
      'refused',
      'refused',
      'refused',
      'refused',
      'refused',
      'refused',
      'refused',
      'won',
    ]);
    expect(existsSync(`${dir}.lock`)).toBe(false); // released at exit

    // A stale lock: its holder's pid no longer runs.
    const dead = await runNode(['-e', 'console.log(process.pid)'], {}, scratch);
    const template = JSON.parse(readFileSync(await lockTemplate(dir), 'utf8')) as Record<string, unknown>;
    writeFileSync(`${dir}.lock`, JSON.stringify({ ...template, pid: Number(dead.out.trim()), token: 'killedholder' }));
    const stale = await race();
    const outcome = stale.map((r) => r.out.trim().split(' ')[0]).sort();
    expect(outcome).toEqual(['refused', 'refused', 'refused', 'refused', 'refused', 'refused', 'refused', 'won']);
    expect(existsSync(`${dir}.lock`)).toBe(false);
  }, 60_000);

  /** A lock file written by a process of this host (its boot id, pid namespace), kept as `<dir>.template`. */
  async function lockTemplate(dir: string): Promise<string> {
    const file = `${dir}.template`;
    const script = `
      const { DataDirLock } = await import(process.argv[1]);
      const { copyFileSync } = await import('node:fs');
      const lock = await DataDirLock.acquire(process.argv[2]);
      copyFileSync(lock.lockFile, process.argv[3]);
      lock.release();`;
    const made = await runNode(['--input-type=module', '-e', script, LOCK.url, dir, file], {}, scratch);
    expect(made).toMatchObject({ code: 0 });
    return file;
  }
});
