/**
 * The service as a child process (`src/main.ts` through the SWC loader, no build needed), for tests
 * that start it from nothing, read its log, or kill it with SIGKILL and start it again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SWC_LOADER = pathToFileURL(`${ROOT}test/support/swc-register.mjs`).href;

export interface ChildApp {
  process: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves with the first log line (parsed JSON) for which `match` is true. */
  waitForLog(match: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface StartChildOptions {
  env: Record<string, string>;
  /** Working directory (default: the repository root). */
  cwd?: string;
  /** Replace the environment entirely instead of extending this process's (PATH is kept). */
  cleanEnv?: boolean;
}

export function startChildApp(options: StartChildOptions): ChildApp {
  const base: Record<string, string | undefined> = options.cleanEnv
    ? { PATH: process.env.PATH, HOME: process.env.HOME }
    : { ...process.env };
  delete base.NODE_OPTIONS; // Jest's --experimental-vm-modules is not for the child
  const child = spawn(process.execPath, ['--no-warnings', '--import', SWC_LOADER, `${ROOT}src/main.ts`], {
    cwd: options.cwd ?? ROOT,
    env: { ...base, SWC_NODE_PROJECT: `${ROOT}tsconfig.json`, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const waiters: Array<{ match: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }> = [];
  let pending = '';
  const onData = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    out += text;
    pending += text;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(line) as Record<string, unknown>;
      } catch {
        parsed = { msg: line };
      }
      for (const w of [...waiters]) {
        if (w.match(parsed)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(parsed);
        }
      }
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    process: child,
    output: () => out,
    exited,
    waitForLog(match, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for a log line; output so far:\n${out}`)), timeoutMs);
        const entry = {
          match,
          resolve: (l: Record<string, unknown>) => {
            clearTimeout(timer);
            resolve(l);
          },
        };
        waiters.push(entry);
        void exited.then((code) => {
          if (waiters.includes(entry)) {
            clearTimeout(timer);
            reject(new Error(`process exited (${code}) before the log line; output:\n${out}`));
          }
        });
      });
    },
    async kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
