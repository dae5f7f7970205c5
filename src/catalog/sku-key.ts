/**
 * A SKU's key and how a caller's reference to a SKU is resolved (pure).
 *
 * The upstream's `sku_code` is unique only within its product (Dujiao-Next's unique index is
 * `(product_id, sku_code)`, and a product without specifications has the one code `DEFAULT`), so a
 * SKU is the pair, named by its `sku_key`: `<upstream product id>:<sku_code>`, unique and stable for as
 * long as the upstream product exists.
 *
 * Where the API takes a SKU (an order, a SKU read, a SKU rule) it takes either form. A reference
 * `<digits>:<rest>` that is the key of a stored SKU names that SKU; anything else is a plain
 * `sku_code`, resolved among the SKUs carrying it (`resolveSkuRef`):
 * - the one listed SKU carrying it (unlisted ones carrying it too do not count);
 * - several listed: ambiguous (409 `sku_ambiguous` with the candidates' keys), never a guess;
 * - none listed: the one SKU carrying it, or, when several unlisted SKUs carry it, ambiguous too
 *   (an order for such a code is 409 `sku_unavailable`: none of them can be ordered, whichever it is).
 *
 * A sku_key is unique within its supplier only (CONTRACT §10): a key several suppliers carry is
 * resolved as a code is (the one listed SKU of that key, else ambiguous). Candidates that belong to
 * several suppliers are named `{supplier, sku_key}`; those of one supplier by their key alone, as a
 * deployment with one supplier always had them.
 */

export const SKU_KEY_RE = /^(\d{1,19}):([\s\S]+)$/;

export function skuKeyOf(productId: number | string, skuCode: string): string {
  return `${productId}:${skuCode}`;
}

/** The product id and code a key names, or null when `ref` does not have a key's form. */
export function parseSkuKey(ref: string): { productId: number; skuCode: string } | null {
  const m = SKU_KEY_RE.exec(ref);
  if (!m) return null;
  const productId = Number(m[1]);
  return Number.isSafeInteger(productId) && String(productId) === m[1] ? { productId, skuCode: m[2] } : null;
}

/** The code part of a key (the key itself when it has no key's form). */
export function codeOfKey(key: string): string {
  return parseSkuKey(key)?.skuCode ?? key;
}

export interface SkuCandidate {
  /** The supplier whose SKU it is (absent: one supplier only). */
  supplier?: string;
  sku_key: string;
  sku_code: string;
  listed: boolean;
}

export type SkuResolution<T extends SkuCandidate> =
  | { kind: 'found'; sku: T }
  | { kind: 'not_found' }
  /** `listed`: whether any candidate is listed (false: every SKU carrying the code is unlisted). */
  | { kind: 'ambiguous'; candidates: CandidateRef[]; listed: boolean };

/** A candidate of an ambiguous reference: its key, or `{supplier, sku_key}` when candidates span several suppliers. */
export type CandidateRef = string | { supplier: string; sku_key: string };

/** A candidate as text (for a message). */
export function candidateText(c: CandidateRef): string {
  return typeof c === 'string' ? c : `${c.supplier}/${c.sku_key}`;
}

/**
 * Resolves `ref` among `rows`: the SKUs whose key or code is `ref` (see the header). Candidates are
 * named in key order.
 */
export function resolveSkuRef<T extends SkuCandidate>(ref: string, rows: readonly T[]): SkuResolution<T> {
  const byKey = rows.filter((r) => r.sku_key === ref);
  const carrying = byKey.length > 0 ? byKey : rows.filter((r) => r.sku_code === ref);
  if (carrying.length === 0) return { kind: 'not_found' };
  const listed = carrying.filter((r) => r.listed);
  if (listed.length === 1) return { kind: 'found', sku: listed[0] };
  if (listed.length === 0 && carrying.length === 1) return { kind: 'found', sku: carrying[0] };
  const named = listed.length > 0 ? listed : carrying;
  const severalSuppliers = new Set(named.map((r) => r.supplier)).size > 1;
  const candidates: CandidateRef[] = severalSuppliers
    ? [...named]
        .sort((a, b) => (a.supplier ?? '').localeCompare(b.supplier ?? '') || a.sku_key.localeCompare(b.sku_key))
        .map((r) => ({ supplier: r.supplier ?? '', sku_key: r.sku_key }))
    : named.map((r) => r.sku_key).sort();
  return { kind: 'ambiguous', candidates, listed: listed.length > 0 };
}
