/**
 * An exclusive lock on the embedded database's data directory, held for as long as a process has it
 * open (the service, or a `relay` command running an instance in its own process): PGlite keeps the
 * database in the process's memory and writes it back on its own, so two processes on one directory
 * lose each other's writes or corrupt it.
 *
 * The lock is a file beside the directory (its real path), `<dir>.lock` (`./data/pglite.lock` by default), that holds
 * one line of JSON naming its holder: pid, hostname, boot id, pid namespace, the process's start time
 * (clock ticks since boot, from /proc), a random token, since when, and its command. It is created
 * whole or not at all: written under a name of its own, then hard-linked to `<dir>.lock`, which fails
 * if the lock exists (O_EXCL creation where hard links are not supported). It is removed on release
 * and at the process's exit.
 *
 * A lock whose holder is gone (killed with SIGKILL, the machine rebooted) is taken over. Its holder is
 * gone when, on this host, this boot and in this pid namespace, no process has its pid
 * (`process.kill(pid, 0)`) or only an exited one not yet reaped (a zombie), or the process with its pid
 * started at another time than it (the pid was reused), or it names this process's pid with a token
 * this process does not hold. A holder this process cannot see (another host or container sharing the
 * directory) refreshes the lock's modification time every HEARTBEAT_MS; it is gone when that is older
 * than STALE_MS.
 *
 * Taking over is exclusive too: a starter that found lock T stale first creates the claim file
 * `<dir>.lock.takeover-T-0` (by the same exclusive link); only the claim's winner, after checking
 * that the lock is still T, renames its own lock over it (atomic). A claim whose maker died before
 * finishing is itself stale and passed on to claim -1, -2… So two starters racing for a free or a
 * stale lock never both win.
 */
import { randomBytes } from 'node:crypto';
import {
  linkSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';

export const DATA_DIR_LOCKED = 'data_dir_locked';

/** A holder that cannot be checked by pid refreshes the lock this often… */
export const HEARTBEAT_MS = 5_000;
/** …and is taken for gone once the lock has not been refreshed for this long. */
export const STALE_MS = 30_000;

/** The content of a lock file. */
export interface LockHolder {
  pid: number;
  hostname: string;
  /** /proc/sys/kernel/random/boot_id, where there is one. */
  boot_id?: string;
  /** The pid namespace (`pid:[4026531836]`), where there is one. */
  pid_ns?: string;
  /** The process's start time in clock ticks since boot (/proc/PID/stat field 22), where there is one. */
  start_ticks?: string;
  token: string;
  since: string;
  command?: string;
}

/** The directory is held by another process (or already by this one). */
export class DataDirLockedError extends Error {
  readonly code = DATA_DIR_LOCKED;

  constructor(
    /** The data directory (absolute). */
    readonly dir: string,
    readonly lockFile: string,
    /** Null when the lock file could not be read as a holder's. */
    readonly holder: LockHolder | null,
    /** Why its holder counts as alive (another host: when it is taken over). */
    readonly detail: string,
  ) {
    super(
      `${DATA_DIR_LOCKED}: the embedded database ${dir} is in use by ` +
        `${describeHolder(holder)}${detail ? ` (${detail})` : ''}; lock file ${lockFile}`,
    );
    this.name = 'DataDirLockedError';
  }
}

function describeHolder(h: LockHolder | null): string {
  if (h === null) return 'another process (its lock file is being written or unreadable)';
  if (h.pid === process.pid && HELD.has(h.token)) return `this process (pid ${h.pid})`;
  const cmd = h.command ? ` (${h.command})` : '';
  return `process ${h.pid}${cmd} on host ${h.hostname}, since ${h.since}`;
}

/** Locks this process holds: token → lock. */
const HELD = new Map<string, DataDirLock>();
/** Tokens of this process's acquisitions under way (their claims and lock files are this process's too). */
const ACQUIRING = new Set<string>();
let exitHookInstalled = false;

interface Found {
  holder: LockHolder | null;
  /** The identity of this lock file's instance: its token, or its inode and time when unreadable. */
  id: string;
  mtimeMs: number;
}

type Verdict = { alive: true; detail: string } | { alive: false };

export class DataDirLock {
  private heartbeat: NodeJS.Timeout | null = null;
  private released = false;

  private constructor(
    readonly dir: string,
    readonly lockFile: string,
    readonly holder: LockHolder,
  ) {}

  /**
   * Takes the lock of the data directory `dir` or throws DataDirLockedError naming its holder. The
   * directory's parent must exist. A few file operations; waits (a few ms at a time, at most ~2 s)
   * only while another starter is half-way through writing or taking over the lock.
   */
  static async acquire(dir: string): Promise<DataDirLock> {
    const abs = canonical(dir);
    const lockFile = `${abs}.lock`;
    const me = ownHolder();
    const lock = new DataDirLock(abs, lockFile, me);
    const tmp = `${lockFile}.${me.token}.tmp`;
    ACQUIRING.add(me.token);
    try {
      writeFileSync(tmp, `${JSON.stringify(me)}\n`, { mode: 0o644 });
      const deadline = Date.now() + 2_000;
      for (let attempt = 0; ; attempt++) {
        if (createExclusive(tmp, lockFile)) break;
        const found = readLock(lockFile);
        if (found === null) {
          // released meanwhile: try again (and no further than the deadline: a lock path that exists
          // but cannot be read, e.g. a dangling symbolic link, must not spin here for ever)
          if (Date.now() > deadline) throw new DataDirLockedError(abs, lockFile, null, 'the lock file exists but cannot be read');
          if (attempt > 0) await new Promise((r) => setTimeout(r, 10));
          continue;
        }
        const verdict = judge(found);
        if (verdict.alive) {
          // An unreadable lock just created is being written (no hard links there): wait for it.
          if (found.holder !== null || Date.now() > deadline) throw new DataDirLockedError(abs, lockFile, found.holder, verdict.detail);
        } else {
          const outcome = takeOver(lockFile, found, tmp);
          if (outcome === 'won') break;
          if (outcome === 'busy' && Date.now() > deadline)
            throw new DataDirLockedError(abs, lockFile, found.holder, 'another process is taking over its stale lock');
        }
        if (attempt > 0) await new Promise((r) => setTimeout(r, 10));
      }
    } finally {
      unlinkQuietly(tmp);
      ACQUIRING.delete(me.token);
    }
    lock.hold();
    return lock;
  }

  private hold(): void {
    HELD.set(this.holder.token, this);
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      process.on('exit', () => {
        for (const l of [...HELD.values()]) l.release();
      });
    }
    this.heartbeat = setInterval(() => {
      try {
        // only while the file is still this lock's (never refresh a lock another process took over)
        if (readLock(this.lockFile)?.holder?.token !== this.holder.token) return;
        const now = new Date();
        utimesSync(this.lockFile, now, now);
      } catch {
        // removed by hand: nothing to refresh
      }
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  /** Removes the lock file if it is still this lock's. Idempotent; synchronous (runs at exit too). */
  release(): void {
    if (this.released) return;
    this.released = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    HELD.delete(this.holder.token);
    const found = readLock(this.lockFile);
    if (found?.holder?.token === this.holder.token) unlinkQuietly(this.lockFile);
  }
}

/** `link(tmp, target)`: creates target whole, or fails with false if it exists. */
function createExclusive(tmp: string, target: string): boolean {
  try {
    linkSync(tmp, target);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw e;
  }
  // A file system without hard links: O_EXCL creation (its content follows in the same write).
  try {
    writeFileSync(target, readFileSync(tmp), { flag: 'wx', mode: 0o644 });
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
}

function readLock(file: string): Found | null {
  let text: string;
  let st: { ino: number; mtimeMs: number };
  try {
    st = statSync(file);
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  const holder = parseHolder(text);
  return { holder, id: holder ? holder.token : `unreadable-${st.ino}-${Math.floor(st.mtimeMs)}`, mtimeMs: st.mtimeMs };
}

function parseHolder(text: string): LockHolder | null {
  try {
    const h = JSON.parse(text) as Partial<LockHolder>;
    if (typeof h.pid !== 'number' || typeof h.hostname !== 'string' || typeof h.token !== 'string' || !/^[\w-]+$/.test(h.token))
      return null;
    return h as LockHolder;
  } catch {
    return null;
  }
}

/** Whether the lock's holder is still there. */
function judge(found: Found): Verdict {
  const h = found.holder;
  const me = ownIdentity();
  const age = Date.now() - found.mtimeMs;
  if (h === null) {
    // Unreadable: one being written (without hard links) is fresh; an old one is debris.
    return age < STALE_MS ? { alive: true, detail: 'being written' } : { alive: false };
  }
  if (HELD.has(h.token) || ACQUIRING.has(h.token)) return { alive: true, detail: '' };
  const sameHost = h.hostname === me.hostname;
  if (sameHost && h.boot_id && me.boot_id && h.boot_id !== me.boot_id) return { alive: false }; // rebooted since
  if (!sameHost || h.boot_id !== me.boot_id || h.pid_ns !== me.pid_ns) {
    // Another host or container: its pid means nothing here; it refreshes the lock while it lives.
    if (age >= STALE_MS) return { alive: false };
    const where = sameHost ? 'another container' : 'another host';
    return {
      alive: true,
      detail:
        `${where}: taken over if not refreshed for ${STALE_MS / 1000} s, at the latest at ` +
        `${new Date(found.mtimeMs + STALE_MS).toISOString()}`,
    };
  }
  if (h.pid === process.pid) return { alive: false }; // this pid, not this process: an earlier process's
  try {
    process.kill(h.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return { alive: false };
    // EPERM: it exists, under another user
  }
  const stat = procStat(h.pid);
  if (stat?.state === 'Z' || stat?.state === 'X') return { alive: false }; // exited, not yet reaped by its parent
  if (h.start_ticks && stat?.startTicks && h.start_ticks !== stat.startTicks) return { alive: false }; // the pid was reused
  return { alive: true, detail: '' };
}

/**
 * Replaces the stale lock `stale` by this process's (`tmp`), if this process wins the claim on it.
 * 'won': the lock is this process's; 'lost': the lock changed meanwhile (look again); 'busy':
 * another live process holds the claim (it is taking the lock over: look again shortly).
 */
function takeOver(lockFile: string, stale: Found, tmp: string): 'won' | 'lost' | 'busy' {
  const prefix = `${lockFile}.takeover-${stale.id}-`;
  for (let n = 0; ; n++) {
    const claim = `${prefix}${n}`;
    if (!createExclusive(tmp, claim)) {
      const other = readLock(claim);
      if (other === null) return 'lost'; // finished and cleaned up by its winner: the lock changed
      if (judge(other).alive) return 'busy';
      continue; // its maker died half-way: claim the next one
    }
    const current = readLock(lockFile);
    if (current?.id !== stale.id) {
      unlinkQuietly(claim);
      return 'lost';
    }
    // Only the holder of a claim on `stale` replaces it, and it is still there: atomic replace.
    renameSync(tmp, lockFile);
    removeClaims(lockFile, prefix);
    return 'won';
  }
}

function removeClaims(lockFile: string, prefix: string): void {
  const name = basename(prefix);
  try {
    for (const f of readdirSync(dirname(lockFile))) if (f.startsWith(name)) unlinkQuietly(join(dirname(lockFile), f));
  } catch {
    // leftovers name a lock instance that is gone: harmless
  }
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}

let own: Omit<LockHolder, 'token' | 'since'> | undefined;

/** Who this process is (read once): pid, host, boot, pid namespace, start time, command. */
function ownIdentity(): Omit<LockHolder, 'token' | 'since'> {
  own ??= {
    pid: process.pid,
    hostname: hostname(),
    boot_id: readQuietly(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()),
    pid_ns: readQuietly(() => readlinkSync('/proc/self/ns/pid')),
    start_ticks: procStat(process.pid)?.startTicks,
    command: [basename(process.argv[1] ?? process.argv0), ...process.argv.slice(2)].join(' ').slice(0, 200),
  };
  return own;
}

/** This process as a new holder (a new token each time). */
function ownHolder(): LockHolder {
  return { ...ownIdentity(), token: randomBytes(12).toString('hex'), since: new Date().toISOString() };
}

/** From /proc/PID/stat: the state (field 3) and when the process started (field 22, clock ticks since boot). */
function procStat(pid: number): { state: string; startTicks: string | undefined } | undefined {
  return readQuietly(() => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid …": comm may hold spaces and parentheses; fields after it start at 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0], startTicks: fields[22 - 3] || undefined };
  });
}

function readQuietly<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

/** The directory's path without symbolic links (so that every way of naming it finds one lock). */
function canonical(dir: string): string {
  const abs = resolve(dir);
  try {
    return realpathSync(abs);
  } catch {
    return join(realpathSync(dirname(abs)), basename(abs)); // not created yet
  }
}

/** Creates the parent of `dir` (the lock lives there). */
export function ensureParent(dir: string): void {
  mkdirSync(dirname(resolve(dir)), { recursive: true });
}
