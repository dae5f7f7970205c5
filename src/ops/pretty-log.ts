/**
 * LOG_FORMAT=pretty: a log record (pino's JSON object) as plain text for a person at a terminal, one
 * line a record: time, level, the logger's context and the message. Fields are left out (the message
 * is written to be read alone), except an error's stack. The start's banner (a record with
 * `event: 'ready'`, main.ts) is a block of its own: what the service is, then one line for each of
 * its URLs and the development token. Pure: json-logger.ts writes what it returns.
 */

/** pino's levels by name (formatters.level in json-logger.ts writes the name). */
const LEVEL_LABEL: Record<string, string> = { trace: 'TRACE', debug: 'DEBUG', info: 'INFO', warn: 'WARN', error: 'ERROR', fatal: 'FATAL' };

/** The banner's lines, in order: its label, and the record's field that holds the value. */
export const BANNER_FIELDS: ReadonlyArray<readonly [label: string, field: string]> = [
  ['API', 'internal_api'],
  ['console', 'console'],
  ['API docs', 'docs'],
  ['callbacks', 'callback_endpoint'],
  ['health', 'health'],
  ['upstream', 'upstream'],
  ['database', 'database'],
  ['dev token', 'dev_token'],
];

/** The text of one record, ending with a newline. */
export function formatPretty(record: Record<string, unknown>): string {
  if (record.event === 'ready') return formatBanner(record);
  const time = typeof record.time === 'string' ? record.time.slice(11, 19) : '';
  const level = LEVEL_LABEL[String(record.level)] ?? String(record.level).toUpperCase();
  const context = typeof record.context === 'string' ? ` [${record.context}]` : '';
  let text = `${time} ${level.padEnd(5)}${context} ${typeof record.msg === 'string' ? record.msg : ''}`.trimEnd();
  const stack = errorStack(record);
  if (stack !== null) text += `\n${indent(stack)}`;
  return `${text}\n`;
}

function formatBanner(record: Record<string, unknown>): string {
  const rows = BANNER_FIELDS.filter(([, field]) => typeof record[field] === 'string' && record[field] !== '').map(([label, field]) => [
    label,
    String(record[field]),
  ]);
  const width = Math.max(...rows.map(([label]) => label.length));
  const lines = rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`);
  if (typeof record.dev_token === 'string')
    lines.push(`  ${''.padEnd(width)}  (send it as "Authorization: Bearer <token>" to /internal/*)`);
  return `\n${typeof record.msg === 'string' ? record.msg : 'ready'}\n${lines.join('\n')}\n\n`;
}

/** The stack of an error the record carries (`err`, or a Nest error's `stack`), or null. */
function errorStack(record: Record<string, unknown>): string | null {
  const err = record.err as { stack?: unknown; message?: unknown } | undefined;
  if (err !== null && typeof err === 'object' && typeof err.stack === 'string') return err.stack;
  if (typeof record.stack === 'string') return record.stack;
  return null;
}

const indent = (text: string) =>
  text
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');
