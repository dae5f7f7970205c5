/**
 * Which supplier's SKUs an order's reference names, pure (CONTRACT §5, §10): with `supplier` given,
 * the SKUs were read at that supplier only; without one, a reference (a sku_key or a sku_code) that
 * SKUs of several suppliers answer to is refused, 409 `sku_ambiguous` with the candidates as
 * `{supplier, sku_key}` (never a guess); one that a single supplier's SKUs answer to is that
 * supplier's. As within one supplier, listed SKUs come first: a reference that one supplier's listed
 * SKUs and only unlisted SKUs elsewhere answer to is the first supplier's. The resolution within one
 * supplier is the catalog's (`resolveSkuRef`).
 */
import type { FoundSku } from '../catalog/catalog-read.repository.js';
import { resolveSkuRef } from '../catalog/sku-key.js';

/** A SKU an order read, with the supplier that carries it. */
export type SupplierSku = FoundSku & { supplier: string };

export type SupplierPick =
  /** The supplier whose SKUs the reference names (null: none names it) and those SKUs. */
  | { kind: 'supplier'; supplier: string | null; found: SupplierSku[] }
  | { kind: 'ambiguous'; candidates: Array<{ supplier: string; sku_key: string }> };

export function pickSupplier(ref: string, found: readonly SupplierSku[]): SupplierPick {
  const bySupplier = new Map<string, SupplierSku[]>();
  for (const f of found) {
    const list = bySupplier.get(f.supplier);
    if (list) list.push(f);
    else bySupplier.set(f.supplier, [f]);
  }
  if (bySupplier.size <= 1) {
    const [only] = bySupplier.keys();
    return { kind: 'supplier', supplier: only ?? null, found: [...found] };
  }
  const answering = (rows: readonly SupplierSku[]) => rows.filter((r) => r.sku.sku_key === ref || r.sku.sku_code === ref);
  const naming = [...bySupplier.entries()].filter(
    ([, rows]) =>
      resolveSkuRef(
        ref,
        rows.map((r) => r.sku),
      ).kind !== 'not_found',
  );
  const listed = naming.filter(([, rows]) => answering(rows).some((r) => r.sku.listed));
  const among = listed.length > 0 ? listed : naming;
  if (among.length === 0) return { kind: 'supplier', supplier: null, found: [] };
  if (among.length === 1) return { kind: 'supplier', supplier: among[0][0], found: among[0][1] };
  const candidates = among.flatMap(([supplier, rows]) => {
    const matching = answering(rows);
    const shown = listed.length > 0 ? matching.filter((r) => r.sku.listed) : matching;
    return shown.map((r) => ({ supplier, sku_key: r.sku.sku_key }));
  });
  candidates.sort((a, b) => a.supplier.localeCompare(b.supplier) || a.sku_key.localeCompare(b.sku_key));
  return { kind: 'ambiguous', candidates };
}
