import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataDirLock, DataDirLockedError, STALE_MS, type LockHolder } from './data-dir-lock.js';

describe('DataDirLock', () => {
  let parent: string;
  let dir: string;
  let lockFile: string;
  /** This process as a holder, as its lock file says (boot id, pid namespace, start time). */
  let template: LockHolder;
  const readHolder = () => JSON.parse(readFileSync(lockFile, 'utf8')) as LockHolder;
  const writeHolder = (h: Partial<LockHolder>, ageMs = 0) => {
    writeFileSync(lockFile, JSON.stringify({ ...template, token: 'stale0token', ...h }));
    if (ageMs) {
      const t = new Date(Date.now() - ageMs);
      utimesSync(lockFile, t, t);
    }
  };
  const deadPid = () => spawnSync(process.execPath, ['-e', '']).pid;

  beforeEach(async () => {
    parent = realpathSync(mkdtempSync(join(tmpdir(), 'relay-lock-')));
    dir = join(parent, 'pglite');
    lockFile = `${dir}.lock`;
    const probe = await DataDirLock.acquire(dir);
    template = readHolder();
    probe.release();
  });
  afterEach(() => rmSync(parent, { recursive: true, force: true }));

  it('writes its holder beside the directory, refuses a second opener (this process too), and removes it on release', async () => {
    const lock = await DataDirLock.acquire(dir);
    const holder = readHolder();
    expect(holder).toMatchObject({ pid: process.pid, token: lock.holder.token, hostname: template.hostname });
    expect(holder.since).toMatch(/^\d{4}-\d\d-\d\dT/);
    const refused = await DataDirLock.acquire(dir).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DataDirLockedError);
    expect((refused as DataDirLockedError).code).toBe('data_dir_locked');
    expect((refused as Error).message).toContain(`the embedded database ${dir} is in use by this process (pid ${process.pid})`);
    lock.release();
    lock.release();
    expect(readdirSync(parent)).toEqual([]);
    (await DataDirLock.acquire(dir)).release();
  });

  it('refuses a lock whose holder is alive, naming its pid and command', async () => {
    writeHolder({ pid: process.ppid, start_ticks: startTicks(process.ppid), command: 'main.js' });
    const refused = await DataDirLock.acquire(dir).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DataDirLockedError);
    expect((refused as Error).message).toMatch(
      new RegExp(`^data_dir_locked: the embedded database ${dir} is in use by process ${process.ppid} \\(main.js\\) on host `),
    );
    expect((refused as Error).message).toContain(`lock file ${lockFile}`);
    expect(readHolder().token).toBe('stale0token');
  });

  it('takes over the lock of a dead process, of a reused pid, and of this pid without its token', async () => {
    for (const h of [{ pid: deadPid() }, { pid: process.ppid, start_ticks: '1' }, { pid: process.pid }]) {
      writeHolder(h);
      const lock = await DataDirLock.acquire(dir);
      expect(readHolder().token).toBe(lock.holder.token);
      lock.release();
    }
    expect(readdirSync(parent)).toEqual([]);
  });

  it('takes over the lock of a process that exited but is not reaped yet (a zombie)', async () => {
    // `sleep 0` exits at once under a parent (`sleep 5`, exec'd by sh) that never reaps it.
    const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 5'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const pid = Number(await new Promise<string>((resolve) => parent.stdout.once('data', (c: Buffer) => resolve(c.toString()))));
      for (let i = 0; i < 100 && !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8')); i++)
        await new Promise((r) => setTimeout(r, 20));
      expect(readFileSync(`/proc/${pid}/stat`, 'utf8')).toMatch(/\) Z /);
      writeHolder({ pid, start_ticks: startTicks(pid) });
      const lock = await DataDirLock.acquire(dir);
      expect(readHolder().token).toBe(lock.holder.token);
      lock.release();
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('a holder on another host: alive while it refreshes the lock, taken over once it stopped', async () => {
    writeHolder({ hostname: 'elsewhere', pid: process.ppid }, 1_000);
    await expect(DataDirLock.acquire(dir)).rejects.toThrow(
      /in use by process \d+ .*on host elsewhere.*another host: taken over if not refreshed for 30 s/,
    );
    writeHolder({ hostname: 'elsewhere', pid: process.ppid }, STALE_MS + 1_000);
    const lock = await DataDirLock.acquire(dir);
    expect(readHolder().token).toBe(lock.holder.token);
    lock.release();
  });

  it('an old unreadable lock file is debris; a claim left by a takeover that died half-way is passed on', async () => {
    writeFileSync(lockFile, '{"pid":');
    const t = new Date(Date.now() - STALE_MS - 1_000);
    utimesSync(lockFile, t, t);
    (await DataDirLock.acquire(dir)).release();

    writeHolder({ pid: deadPid() });
    writeFileSync(`${lockFile}.takeover-stale0token-0`, JSON.stringify({ ...template, pid: deadPid(), token: 'deadclaimer' }));
    const lock = await DataDirLock.acquire(dir);
    expect(readdirSync(parent).sort()).toEqual(['pglite.lock']);
    lock.release();
  });

  it('one lock for the directory however it is named (relative, through a symbolic link)', async () => {
    const lock = await DataDirLock.acquire(dir);
    symlinkSync(parent, join(parent, 'link'));
    await expect(DataDirLock.acquire(join(parent, 'link', 'pglite'))).rejects.toThrow(/in use by this process/);
    await expect(DataDirLock.acquire(join(parent, 'link', '..', 'pglite'))).rejects.toThrow(/in use by this process/);
    lock.release();
  });

  it('release leaves alone a lock that is no longer its own', async () => {
    const lock = await DataDirLock.acquire(dir);
    writeHolder({ token: 'someoneelse' });
    lock.release();
    expect(existsSync(lockFile)).toBe(true);
  });
});

function startTicks(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}
