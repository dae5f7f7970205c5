/**
 * The generated row types (src/database/rows.generated.ts) say what the driver returns for each SQL
 * type (src/database/pg-column-types.ts): this checks it, through the service's own driver (TypeORM
 * on `pg`), on PGlite and on PostgreSQL, for every column type the migrated schema uses.
 */
import { DataSource } from 'typeorm';
import { PG_COLUMN_TYPES } from '../src/database/pg-column-types.js';
import { openTestDatabase, type TestDatabase } from './support/test-database.js';

/** A value of each SQL type (by pg_type.typname), and what the driver gives for it. */
const SAMPLES: Record<string, { sql: string; value: unknown }> = {
  int2: { sql: `7::smallint`, value: 7 },
  int4: { sql: `7::integer`, value: 7 },
  int8: { sql: `9007199254740993::bigint`, value: '9007199254740993' },
  numeric: { sql: `12.50::numeric`, value: '12.50' },
  text: { sql: `'a'::text`, value: 'a' },
  bool: { sql: `true`, value: true },
  timestamptz: { sql: `'2026-01-02T03:04:05.678Z'::timestamptz`, value: new Date('2026-01-02T03:04:05.678Z') },
  jsonb: { sql: `'{"a":[1,"x"]}'::jsonb`, value: { a: [1, 'x'] } },
  json: { sql: `'[1]'::json`, value: [1] },
  bytea: { sql: `'\\x00ff'::bytea`, value: Buffer.from([0, 255]) },
};

/** Whether `value` is of the TypeScript type the generated file names. */
function isOfType(tsType: string, value: unknown): boolean {
  switch (tsType) {
    case 'number':
      return typeof value === 'number';
    case 'string':
    case 'PgInt8':
      return typeof value === 'string';
    case 'boolean':
      return typeof value === 'boolean';
    case 'Date':
      return value instanceof Date;
    case 'Buffer':
      return Buffer.isBuffer(value);
    case 'unknown':
      return true;
    default:
      return false;
  }
}

describe('the generated row types match what the driver returns', () => {
  let db: TestDatabase;
  let ds: DataSource;

  beforeAll(async () => {
    db = await openTestDatabase();
    ds = new DataSource({ type: 'postgres', url: db.url, poolSize: 1 });
    await ds.initialize();
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.close();
  });

  it('gives each column type of the schema as its generated type says', async () => {
    const used = (await ds.query(
      `SELECT DISTINCT regexp_replace(c.udt_name, '^_', '') AS typname, c.data_type = 'ARRAY' AS is_array
         FROM information_schema.columns c
         JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
        WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
        ORDER BY 1, 2`,
    )) as Array<{ typname: string; is_array: boolean }>;
    expect(used.map((u) => u.typname)).toEqual(expect.arrayContaining(['int8', 'numeric', 'timestamptz', 'jsonb', 'bytea']));
    const problems: string[] = [];
    for (const { typname, is_array } of used) {
      const tsType = PG_COLUMN_TYPES[typname];
      const sample = SAMPLES[typname];
      if (!tsType || !sample) {
        problems.push(`${typname}: ${tsType ? 'no sample here' : 'no type in pg-column-types.ts'}`);
        continue;
      }
      const sql = is_array ? `ARRAY[${sample.sql}]` : sample.sql;
      const [{ v }] = (await ds.query(`SELECT ${sql} AS v`)) as Array<{ v: unknown }>;
      const values = is_array ? (Array.isArray(v) ? (v as unknown[]) : [Symbol('not an array')]) : [v];
      for (const value of values) {
        if (!isOfType(tsType, value)) problems.push(`${typname}${is_array ? '[]' : ''}: ${String(value)} is not a ${tsType}`);
      }
      expect(values).toEqual([sample.value]);
    }
    expect(problems).toEqual([]);
  });

  it('tells a value of another type', () => {
    expect(isOfType('PgInt8', 1)).toBe(false);
    expect(isOfType('number', '1')).toBe(false);
    expect(isOfType('Date', '2026-01-02')).toBe(false);
    expect(isOfType('Buffer', new Uint8Array([1]))).toBe(false);
    expect(isOfType('Money', '1')).toBe(false);
  });
});
