// Runs once per `npm test`, before any worker (plain JS: Jest loads global setup outside its ESM
// transform). It clears what an earlier run left; the first test file to need a database then
// migrates the template once (test/support/test-database.ts), under a lock shared by the workers.
import { mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export default async function globalSetup() {
  const cache = fileURLToPath(new URL('../.cache/', import.meta.url));
  rmSync(cache, { recursive: true, force: true });
  mkdirSync(cache, { recursive: true });
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) return;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query(
      "SELECT datname FROM pg_database WHERE datname LIKE 'relay_t_%' OR datname = 'relay_template'",
    );
    for (const r of rows) await admin.query(`DROP DATABASE IF EXISTS "${r.datname}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
