/**
 * The TypeScript type of a column's value by its SQL type's name (`pg_type.typname`), as the service's
 * driver returns it: `pg` with its default parsers, on PostgreSQL and on the embedded PGlite alike (the
 * service reaches PGlite over its socket, through `pg`). scripts/gen-db-types.mjs writes
 * src/database/rows.generated.ts with it; test/db-row-types.e2e-spec.ts checks each entry the schema
 * uses against what the driver returns on both databases.
 *
 * - bigint: the decimal text (`PgInt8`, declared in the generated file): it may exceed a JavaScript
 *   number, so the driver never parses it; mappers call `Number()` or `String()` where the domain wants one.
 * - numeric: the decimal text (money is never a JavaScript number).
 * - timestamptz, date: a Date.
 * - json, jsonb: the parsed value (`unknown`: the domain's mapper names its shape).
 * - bytea: a Buffer.
 * - interval: the driver's PostgresInterval object (`unknown`).
 * An array column is an array of its element's type. A type not listed stops the generator.
 */
export const PG_COLUMN_TYPES: Readonly<Record<string, string>> = {
  int2: 'number',
  int4: 'number',
  int8: 'PgInt8',
  float4: 'number',
  float8: 'number',
  oid: 'number',
  numeric: 'string',
  text: 'string',
  varchar: 'string',
  bpchar: 'string',
  name: 'string',
  uuid: 'string',
  inet: 'string',
  bool: 'boolean',
  timestamptz: 'Date',
  timestamp: 'Date',
  date: 'Date',
  json: 'unknown',
  jsonb: 'unknown',
  bytea: 'Buffer',
  interval: 'unknown',
};
