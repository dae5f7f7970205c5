/**
 * Money of the sandbox: integer cents as bigint, decimal strings with two decimals on the wire.
 * Never a float.
 */
const MONEY_RE = /^(\d{1,15})(?:\.(\d{1,2}))?$/;

/** Parses a non-negative decimal string with at most two decimals ('12', '12.5', '12.50'). */
export function parseMoney(value: string): bigint {
  const m = MONEY_RE.exec(value);
  if (!m) throw new RangeError(`not a decimal amount with at most two decimals: ${JSON.stringify(value)}`);
  return BigInt(m[1]) * 100n + BigInt((m[2] ?? '').padEnd(2, '0'));
}

export function isMoney(value: unknown): value is string {
  return typeof value === 'string' && MONEY_RE.test(value);
}

/** Formats cents as a decimal string with two decimals. */
export function formatMoney(cents: bigint): string {
  const negative = cents < 0n;
  const abs = negative ? -cents : cents;
  return `${negative ? '-' : ''}${abs / 100n}.${(abs % 100n).toString().padStart(2, '0')}`;
}

/** cents × percent / 100, rounded down to the cent. */
export function percentOf(cents: bigint, percent: number): bigint {
  return (cents * BigInt(percent)) / 100n;
}
