/**
 * Money as the API gives it: decimal strings. Arithmetic here is exact (BigInt over powers of ten),
 * never a JavaScript float: a difference, a margin percentage, and the sale price a markup gives,
 * the same formula as the service's `src/catalog/pricing.ts`:
 *
 *   sale = roundUp(max(cost × (1 + percent/100) + fixed, cost), step), printed at max(scale(step), scale(cost))
 */

export interface Dec {
  /** The digits, sign included: `12.50` is 1250n at scale 2. */
  units: bigint;
  scale: number;
}

const DECIMAL_RE = /^\s*(-?)(\d+)(?:\.(\d+))?\s*$/;

export function isDecimal(s: string): boolean {
  return DECIMAL_RE.test(s);
}

export function parseDec(s: string): Dec {
  const m = DECIMAL_RE.exec(s);
  if (!m) throw new RangeError(`not a decimal: ${JSON.stringify(s)}`);
  const frac = m[3] ?? '';
  const units = BigInt(m[2] + frac);
  return { units: m[1] === '-' ? -units : units, scale: frac.length };
}

const pow10 = (n: number): bigint => 10n ** BigInt(n);

function rescale(d: Dec, scale: number): bigint {
  return d.units * pow10(scale - d.scale);
}

export function formatDec(units: bigint, scale: number): string {
  const neg = units < 0n;
  const digits = (neg ? -units : units).toString().padStart(scale + 1, '0');
  const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return neg ? `-${text}` : text;
}

export function compareDec(a: string, b: string): number {
  const x = parseDec(a);
  const y = parseDec(b);
  const s = Math.max(x.scale, y.scale);
  const d = rescale(x, s) - rescale(y, s);
  return d === 0n ? 0 : d < 0n ? -1 : 1;
}

/** a − b, exact, at the larger scale. */
export function subtractDec(a: string, b: string): string {
  const x = parseDec(a);
  const y = parseDec(b);
  const s = Math.max(x.scale, y.scale);
  return formatDec(rescale(x, s) - rescale(y, s), s);
}

/** Integer division rounding half away from zero. */
function divRound(n: bigint, d: bigint): bigint {
  if (d < 0n) return divRound(-n, -d);
  const q = n / d;
  const r = n % d;
  if (2n * (r < 0n ? -r : r) >= d) return n < 0n ? q - 1n : q + 1n;
  return q;
}

/** Ceiling of n / d for d > 0. */
function divCeil(n: bigint, d: bigint): bigint {
  const q = n / d;
  return n % d !== 0n && n > 0n ? q + 1n : q;
}

/** (sale − cost) / sale as a percentage with one decimal, e.g. `23.1`; null when the sale price is 0. */
export function marginPercent(cost: string, sale: string): string | null {
  if (!isDecimal(cost) || !isDecimal(sale)) return null;
  const c = parseDec(cost);
  const p = parseDec(sale);
  const s = Math.max(c.scale, p.scale);
  const saleUnits = rescale(p, s);
  if (saleUnits === 0n) return null;
  return formatDec(divRound((saleUnits - rescale(c, s)) * 1000n, saleUnits), 1);
}

export interface MarkupText {
  markup_percent: string;
  markup_fixed: string;
  rounding?: string | null;
}

/** The sale price that `markup` gives for `cost` (null when an input is not a valid decimal). */
export function previewSalePrice(cost: string, markup: MarkupText, defaultRounding: string): string | null {
  const stepText = markup.rounding == null || markup.rounding === '' ? defaultRounding : markup.rounding;
  if (![cost, markup.markup_percent, markup.markup_fixed, stepText].every(isDecimal)) return null;
  const c = parseDec(cost);
  const p = parseDec(markup.markup_percent);
  const f = parseDec(markup.markup_fixed);
  const st = parseDec(stepText);
  if (st.units <= 0n) return null;
  // x = C/10^c × (100·10^p + P)/(100·10^p) + F/10^f, over the common denominator D.
  const D = pow10(c.scale) * 100n * pow10(p.scale) * pow10(f.scale);
  let N = c.units * (100n * pow10(p.scale) + p.units) * pow10(f.scale) + f.units * pow10(c.scale) * 100n * pow10(p.scale);
  const costN = c.units * (D / pow10(c.scale));
  if (N < costN) N = costN;
  // Up to the step's grid: k = ceil(x / step), the price is k × step.
  const k = divCeil(N * pow10(st.scale), D * st.units);
  const scale = Math.max(st.scale, c.scale);
  return formatDec(k * st.units * pow10(scale - st.scale), scale);
}
