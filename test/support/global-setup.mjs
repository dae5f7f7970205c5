// Runs once per `npm test`, before any worker (plain JS: Jest loads global setup outside its ESM
// transform). It names this run (several runs may share a checkout and a server), and clears what
// runs older than two hours left behind. The first test file to need a database then migrates the
// template once for the run (test/support/test-database.ts), under a lock shared by the workers.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const STALE_MS = 2 * 3600_000;

export default async function globalSetup() {
  const now = Date.now();
  const run = `${Math.floor(now / 1000)}_${process.pid}`;
  process.env.RELAY_TEST_RUN = run;

  const cache = fileURLToPath(new URL('../.cache/', import.meta.url));
  mkdirSync(cache, { recursive: true });
  for (const entry of readdirSync(cache)) {
    const path = `${cache}${entry}`;
    if (now - statSync(path).mtimeMs > STALE_MS) rmSync(path, { recursive: true, force: true });
  }
  mkdirSync(`${cache}${run}`, { recursive: true });
  buildForChildren(`${cache}${run}/build`);

  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) return;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query("SELECT datname FROM pg_database WHERE datname ~ '^relay_t(pl)?_[0-9]+_'");
    for (const { datname } of rows) {
      const started = Number(datname.split('_')[2]) * 1000;
      if (now - started > STALE_MS) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    }
  } finally {
    await admin.end();
  }
}

/**
 * Compiles `src/` once for the run, as `npm run build` does (SWC with `.swcrc`), into
 * `test/.cache/<run>/build/src/`: the tests that start the service or the `relay` command as a
 * process run that JavaScript (test/support/child-app.ts `nodeEntry`) instead of compiling every
 * module again in each process through the SWC loader. `migrations` and `dist` beside it are links
 * to the repository's, where the compiled modules look for them (`../../migrations/`, `../../dist/`);
 * packages resolve from the repository's `node_modules` above.
 */
function buildForChildren(build) {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  mkdirSync(build, { recursive: true });
  execFileSync(`${root}node_modules/.bin/swc`, ['src', '-d', build, '--config-file', '.swcrc', '-q'], { cwd: root, stdio: 'inherit' });
  symlinkSync(`${root}migrations`, `${build}/migrations`);
  symlinkSync(`${root}dist`, `${build}/dist`);
}
