/**
 * The embedded PostgreSQL (PGlite) served over the PostgreSQL wire protocol from a worker thread of
 * the service's process, so the service talks to it through the same `pg` driver as to a real server
 * while the database's work runs beside the service's JavaScript, on another core. PGlite is one
 * backend: the socket server runs one query at a time and keeps a transaction's queries together, so
 * transactions run one at a time. Never await a query on another connection while holding a
 * transaction.
 *
 * Why a worker: PGlite runs PostgreSQL as WebAssembly on the thread that holds it. On the service's
 * own thread every statement's work would wait for (and hold up) the service's request handling; in
 * a worker the database's work runs on another core, as a server's would, which raises the orders
 * and callbacks a PGlite service carries. The worker is the same process (one memory, the same
 * data-directory lock, nothing more to run or to stop); the service reaches it over a loopback
 * socket. A sync gains nothing (its writes wait for the one database either way), and the worker's
 * own heap adds a little to the process's peak (kept small: WORKER_YOUNG_GENERATION_MB). If the
 * worker ends unexpectedly, the error is
 * logged and every query fails from then on; the service (main.ts, `onEnded`) then exits so that its
 * supervisor starts it again.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { Worker, type MessagePort } from 'node:worker_threads';
import { Logger } from '@nestjs/common';
import { PGlite } from '@electric-sql/pglite';
import type { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { heapPolicy } from '../common/heap-policy.js';
import { DataDirLock, ensureParent } from './data-dir-lock.js';

export interface EmbeddedPostgresOptions {
  /** A directory, or 'memory'. */
  path: string | 'memory';
  /** A data directory dump (from `dumpDataDir`) to start from, e.g. a migrated snapshot in tests. */
  loadDataDir?: Blob;
  /** Connections the socket server accepts; at least the pool sizes of every client. */
  maxConnections?: number;
  /**
   * A database open for a short while (a `relay migrate`, a test): its WebAssembly is compiled as V8
   * does by default, baseline compiler first, instead of by the optimizing compiler alone. It opens
   * much sooner, for tens of MB more machine code, which a long-running service would keep (see
   * tuneV8ForEmbeddedDatabase).
   */
  shortLived?: boolean;
  /**
   * Told what the start is doing while it takes long: creating the data directory (first start
   * only), then opening it. The service logs it (database-endpoint.ts); a test or a CLI command, nothing.
   */
  onProgress?: (message: string) => void;
}

/**
 * The worker's young generation (V8's default is ~16–32 MB here): the protocol's buffers pass through
 * it quickly, and a smaller one is collected more often instead of growing the process; a sync is
 * no slower with it (bench:sync on PGlite shows the peak RSS).
 */
const WORKER_YOUNG_GENERATION_MB = 4;

/** What the worker is started with (its workerData). */
interface WorkerInit {
  /** Module paths, resolved by the service (the worker's code is evaluated, with no module of its own). */
  pglite: string;
  socket: string;
  dataDir: string | undefined;
  loadDataDir: ArrayBuffer | undefined;
  startParams: string[];
  maxConnections: number;
}

type ToWorker = { type: 'stop' } | { type: 'drop' } | { type: 'dump' };
type FromWorker =
  | { type: 'ready'; port: number }
  | { type: 'stopped' }
  | { type: 'dropped' }
  | { type: 'dumped'; data: ArrayBuffer }
  | { type: 'error'; message: string };

export class EmbeddedPostgres {
  private readonly logger = new Logger('database');
  private stopping = false;
  private stopped: Promise<void> | null = null;
  /** Set once the worker has ended (stopped, or on its own): nothing it is asked is answered. */
  private exited = false;
  /** The answer the service waits for (one request at a time: see `ask`). */
  private waiting: { resolve(m: FromWorker): void; reject(e: Error): void } | null = null;
  /** The requests in order: each is sent once the one before it was answered. */
  private requests: Promise<unknown> = Promise.resolve();
  private readonly endedListeners: Array<(code: number) => void> = [];

  /** The port the worker serves on, once it said it is ready. */
  private port = 0;

  private constructor(
    private readonly worker: Worker,
    /** The data directory's lock, held until stop (none in memory). */
    private readonly lock: DataDirLock | null,
  ) {
    worker.on('message', (m: FromWorker) => {
      const w = this.waiting;
      this.waiting = null;
      if (m.type === 'error') w?.reject(new Error(m.message));
      else w?.resolve(m);
    });
    worker.on('error', (e) => {
      this.logger.error(`the embedded database's worker failed: ${e.stack ?? e.message}`);
      this.waiting?.reject(e);
      this.waiting = null;
    });
    worker.on('exit', (code) => {
      this.exited = true;
      if (!this.stopping && this.port !== 0) {
        this.logger.error(`the embedded database's worker ended (exit code ${code}): every query fails from now on`);
        for (const listener of this.endedListeners) listener(code);
      }
      this.waiting?.reject(new Error(`the embedded database's worker ended (exit code ${code})`));
      this.waiting = null;
    });
  }

  /** `postgres://…` for the `pg` driver. */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres?sslmode=disable`;
  }

  /**
   * Opens (creates on first start) the database. A data directory is locked first, for as long as it
   * is open: another process's, or this one's, open of it fails with DataDirLockedError
   * (`data_dir_locked`) before anything is written (see data-dir-lock.ts).
   */
  static async start(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
    let lock: DataDirLock | null = null;
    if (options.path !== 'memory') {
      try {
        ensureParent(options.path);
      } catch (e) {
        throw new Error(`could not create the embedded database in ${options.path}: ${(e as Error).message}`, { cause: e });
      }
      lock = await DataDirLock.acquire(options.path);
    }
    try {
      if (options.path !== 'memory') {
        if (options.loadDataDir) mkdirSync(options.path, { recursive: true });
        else await initialiseDataDir(options.path, options.onProgress);
        options.onProgress?.(`opening the embedded database in ${options.path}`);
      }
      tuneV8ForEmbeddedDatabase(options.shortLived === true);
      const require = createRequire(import.meta.url);
      const init: WorkerInit = {
        pglite: require.resolve('@electric-sql/pglite'),
        socket: require.resolve('@electric-sql/pglite-socket'),
        dataDir: options.path === 'memory' ? undefined : options.path,
        loadDataDir: options.loadDataDir ? await options.loadDataDir.arrayBuffer() : undefined,
        startParams: EMBEDDED_START_PARAMS,
        maxConnections: options.maxConnections ?? 100,
      };
      const worker = new Worker(`(${embeddedDatabaseWorker.toString()})(require('node:worker_threads'), require);`, {
        eval: true,
        workerData: init,
        transferList: init.loadDataDir ? [init.loadDataDir] : [],
        resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      });
      const db = new EmbeddedPostgres(worker, lock);
      // the worker's first word: ready (its port), or why it could not start
      const ready = await db.ask(null, 'ready').catch(async (e: unknown) => {
        db.stopping = true;
        await worker.terminate();
        throw e;
      });
      db.port = (ready as { port: number }).port;
      return db;
    } catch (e) {
      lock?.release();
      throw e;
    }
  }

  /** `listener` is called if the worker ends without being stopped (the database is gone for good). */
  onEnded(listener: (code: number) => void): void {
    this.endedListeners.push(listener);
  }

  /**
   * Sends `message` (null: none, the worker's next word is awaited) once every earlier request was
   * answered, and resolves with its answer. A worker that has ended answers nothing (a message to it
   * is dropped): the request is refused at once.
   */
  private ask(message: ToWorker | null, answer: FromWorker['type']): Promise<FromWorker> {
    const send = () =>
      new Promise<FromWorker>((resolve, reject) => {
        if (this.exited) return reject(new Error(`the embedded database's worker has ended: cannot ${message?.type ?? 'start'}`));
        this.waiting = {
          resolve: (m) => (m.type === answer ? resolve(m) : reject(new Error(`unexpected ${m.type} from the embedded database's worker`))),
          reject,
        };
        if (message) this.worker.postMessage(message);
      });
    const result = this.requests.then(send, send);
    this.requests = result.catch(() => undefined);
    return result;
  }

  /** The data directory as a dump (for `loadDataDir`), e.g. a migrated snapshot for tests. */
  async dumpDataDir(): Promise<Blob> {
    const m = (await this.ask({ type: 'dump' }, 'dumped')) as { data: ArrayBuffer };
    return new Blob([m.data]);
  }

  /**
   * Drops every client connection from the server side, as a restarted server would (the embedded
   * counterpart of `pg_terminate_backend`), to test that the pool reconnects.
   */
  async dropConnections(): Promise<void> {
    await this.ask({ type: 'drop' }, 'dropped');
  }

  /**
   * Stops the server, then the database, then the worker (after any request still being answered); a
   * second call waits for the first, and one after a failed stop tries again. A worker that has
   * already ended holds nothing: the directory's lock is released at once.
   */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.stopping = true;
      if (!this.exited) await this.ask({ type: 'stop' }, 'stopped');
      await this.worker.terminate();
      // Released once closed only: a close that failed keeps the directory locked until the process exits.
      this.lock?.release();
    })().catch((e: unknown) => {
      this.stopped = null;
      throw e;
    });
    return this.stopped;
  }
}

/**
 * V8 settings for a process that holds the embedded database, set before its first PGlite starts:
 * - WebAssembly is compiled by the optimizing compiler alone (`--no-liftoff`). PGlite's module is
 *   large: compiled by the baseline compiler first, then again by the optimizing one for its hot
 *   functions, its machine code takes tens of MB more, which a long-running service keeps. A sync or
 *   an order is no slower without the baseline code. The price is a slower start, as the optimizing
 *   compiler compiles everything PostgreSQL runs once while it starts (bench:startup and bench:sync
 *   show both sides).
 * - The JavaScript heap grows less between full collections, and less still while a sync runs
 *   (see HeapPolicy).
 * The service has no other WebAssembly; on a PostgreSQL server none of this is set.
 * `shortLived` (EmbeddedPostgresOptions) keeps V8's default compilers: the flag is the process's, read
 * when a function is compiled, so it is set at every start, for that start.
 */
function tuneV8ForEmbeddedDatabase(shortLived: boolean): void {
  setFlagsFromString(shortLived ? '--liftoff' : '--no-liftoff');
  heapPolicy.enable();
}

/**
 * Creates the data directory on first start, in a short-lived child process. `initdb` runs in a
 * WebAssembly instance of its own that needs hundreds of MB while it works; in the service's process
 * most of that would stay resident for good afterwards, so the service's memory would depend on
 * whether it had created its database. The child costs a Node start, once per data directory. It works
 * in a sibling directory renamed into place when complete, so a first start killed half-way leaves no
 * half-made database behind (only that sibling, removed by the next start). A directory that already
 * holds other files is initialised in place, as PGlite itself would.
 */
async function initialiseDataDir(path: string, onProgress?: (message: string) => void): Promise<void> {
  if (existsSync(join(path, 'PG_VERSION'))) return;
  const began = performance.now();
  onProgress?.(`creating the embedded database in ${path} (first start only: this takes a while)`);
  const created = () => onProgress?.(`created the embedded database in ${((performance.now() - began) / 1000).toFixed(1)} s`);
  const pglite = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const script = `require(process.argv[1]).PGlite.create({ dataDir: process.argv[2] }).then((db) => db.close()).then(
    () => process.exit(0),
    (e) => { console.error(e && e.stack ? e.stack : String(e)); process.exit(1); })`;
  const parent = dirname(path);
  const partial = `${basename(path)}${PARTIAL_SUFFIX}`;
  const initdb = (dir: string) => promisify(execFile)(process.execPath, ['-e', script, pglite, dir], { maxBuffer: 1 << 20 });
  try {
    if (existsSync(path) && readdirSync(path).length > 0) {
      // a directory of other files (e.g. pglite://./data beside the generated secrets), as PGlite itself would
      await initdb(path);
      created();
      return;
    }
    mkdirSync(parent, { recursive: true });
    for (const name of readdirSync(parent)) if (name.startsWith(partial)) rmSync(join(parent, name), { recursive: true, force: true });
    const work = join(parent, `${partial}${process.pid}`);
    await initdb(work);
    if (existsSync(path)) rmdirSync(path); // empty
    renameSync(work, path);
    created();
  } catch (e) {
    const reason = (e as { stderr?: string }).stderr?.trim() || (e as Error).message;
    throw new Error(`could not create the embedded database in ${path}: ${reason}`, { cause: e });
  }
}

const PARTIAL_SUFFIX = '.initialising-';

/**
 * PGlite's own start parameters, with a smaller buffer pool: the embedded database lives in the
 * service's memory (its WebAssembly heap only grows), and its data files are read through the
 * operating system's page cache anyway. 16 MB instead of PostgreSQL's 128 MB keeps the service's
 * peak RSS during a large sync well lower without slowing it (bench/sync.bench.ts).
 */
const EMBEDDED_START_PARAMS = [...(PGlite as unknown as { defaultStartParams: string[] }).defaultStartParams, '-c', 'shared_buffers=16MB'];

/**
 * The worker's code (its source is evaluated in the worker: it refers to nothing outside itself).
 * It opens PGlite and serves it on a loopback port, then answers the service's messages: `drop`
 * (every client connection), `dump` (the data directory), `stop` (server, then database).
 *
 * pglite-socket 0.2.17 queues each wire message on its own and keeps only a transaction's messages
 * together: outside a transaction, the Parse/Bind/Execute/Sync of two connections interleave, so one
 * connection binds the other's unnamed statement ("bind message supplies 1 parameters, but prepared
 * statement requires 2"); and its queue stops for good after one failed message (`processing` is
 * never reset). `keepExchangesTogether` keeps a connection's extended-protocol exchange together up to
 * its Sync (as a transaction is), goes on after a failed message, and ends a dropped connection's open
 * exchange.
 */
function embeddedDatabaseWorker(threads: typeof import('node:worker_threads'), load: (id: string) => unknown): void {
  const port = threads.parentPort as MessagePort;
  const init = threads.workerData as WorkerInit;
  const { PGlite: PGliteClass } = load(init.pglite) as { PGlite: typeof PGlite };
  const { PGLiteSocketServer: Server } = load(init.socket) as { PGLiteSocketServer: typeof PGLiteSocketServer };

  interface QueuedMessage {
    handlerId: number;
    message: Uint8Array;
    resolve(size: number): void;
    reject(e: Error): void;
    onData(data: Uint8Array): void;
  }
  interface QueryQueue {
    queue: QueuedMessage[];
    processing: boolean;
    lastHandlerId: number | null;
    db: PGlite;
    processQueue(): Promise<void>;
    clearTransactionIfNeeded(handlerId: number): Promise<void>;
  }
  /** Extended-protocol messages that leave an exchange open until its Sync: Parse, Bind, Describe, Execute, Close, Flush. */
  const OPEN_EXCHANGE = new Set([0x50, 0x42, 0x44, 0x45, 0x43, 0x48]);
  const SYNC = new Uint8Array([0x53, 0, 0, 0, 4]);

  function keepExchangesTogether(server: PGLiteSocketServer): void {
    const q = (server as unknown as { queryQueue: QueryQueue }).queryQueue;
    let openHandler: number | null = null;
    q.processQueue = async function (this: QueryQueue): Promise<void> {
      if (this.processing || this.queue.length === 0) return;
      this.processing = true;
      try {
        while (this.queue.length > 0) {
          const sticky = this.lastHandlerId !== null && (openHandler === this.lastHandlerId || this.db.isInTransaction());
          const i = sticky ? this.queue.findIndex((m) => m.handlerId === this.lastHandlerId) : 0;
          if (i === -1) break;
          const [m] = this.queue.splice(i, 1);
          let size = 0;
          try {
            await this.db.runExclusive(() =>
              this.db.execProtocolRawStream(m.message, {
                onRawData: (data: Uint8Array) => {
                  size += data.length;
                  m.onData(data);
                },
              }),
            );
          } catch (e) {
            openHandler = null;
            m.reject(e as Error);
            continue;
          }
          this.lastHandlerId = m.handlerId;
          openHandler = OPEN_EXCHANGE.has(m.message[0]) ? m.handlerId : null;
          m.resolve(size);
        }
      } finally {
        this.processing = false;
      }
    };
    const clear = q.clearTransactionIfNeeded.bind(q);
    q.clearTransactionIfNeeded = async function (this: QueryQueue, handlerId: number): Promise<void> {
      if (openHandler === handlerId) {
        openHandler = null;
        await this.db.runExclusive(() => this.db.execProtocolRaw(SYNC)).catch(() => undefined);
      }
      await clear(handlerId);
      await this.processQueue();
    };
  }

  const describe = (e: unknown) => (e instanceof Error ? (e.stack ?? e.message) : String(e));
  void (async () => {
    let db: PGlite | null = null;
    let server: PGLiteSocketServer;
    try {
      db = await PGliteClass.create({
        dataDir: init.dataDir,
        loadDataDir: init.loadDataDir ? new Blob([init.loadDataDir]) : undefined,
        startParams: init.startParams,
      });
      server = new Server({ db, host: '127.0.0.1', port: 0, maxConnections: init.maxConnections });
      keepExchangesTogether(server);
      await server.start();
    } catch (e) {
      await db?.close().catch(() => undefined);
      port.postMessage({ type: 'error', message: describe(e) });
      return;
    }
    const live = db;
    port.on('message', (m: ToWorker) => {
      const work = async (): Promise<void> => {
        if (m.type === 'drop') {
          const handlers = (server as unknown as { handlers: Set<{ detach(close: boolean): Promise<unknown> }> }).handlers;
          for (const h of handlers) void h.detach(true);
          handlers.clear();
          port.postMessage({ type: 'dropped' });
        } else if (m.type === 'dump') {
          const data = await (await live.dumpDataDir('none')).arrayBuffer();
          port.postMessage({ type: 'dumped', data }, [data]);
        } else if (m.type === 'stop') {
          await server.stop();
          await live.close();
          port.postMessage({ type: 'stopped' });
          port.close();
        }
      };
      work().catch((e: unknown) => port.postMessage({ type: 'error', message: describe(e) }));
    });
    port.postMessage({ type: 'ready', port: Number(server.getServerConn().split(':')[1]) });
  })();
}
