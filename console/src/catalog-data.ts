/** Catalog helpers shared by the catalog, SKU and pricing pages. */
import { api } from './api.js';
import { html } from './html.js';
import { marginPercent, subtractDec } from './money.js';
import type { Category, Sku } from './types.js';
import { pickText } from './ui.js';

export interface FlatCategory {
  id: number;
  parentId: number;
  name: string;
  depth: number;
  listed: boolean;
}

export function flattenCategories(tree: Category[], depth = 0, out: FlatCategory[] = []): FlatCategory[] {
  for (const c of tree) {
    out.push({ id: Number(c.id), parentId: Number(c.parent_id), name: pickText(c.name) || c.slug, depth, listed: c.listed });
    flattenCategories(c.children ?? [], depth + 1, out);
  }
  return out;
}

export async function loadCategories(): Promise<FlatCategory[]> {
  const body = await api.get<{ ok: true; categories: Category[] }>('/internal/catalog/categories');
  return flattenCategories(body.categories);
}

export function skuTitle(s: Sku): string {
  const title = pickText(s.product_title);
  const spec = s.spec_values ? Object.values(s.spec_values).join(' / ') : '';
  return spec ? `${title} · ${spec}` : title;
}

/** Margin over the sale price: the exact amount and a percentage. */
export function Margin({ cost, sale }: { cost: string; sale: string }) {
  let diff: string | null;
  try {
    diff = subtractDec(sale, cost);
  } catch {
    diff = null;
  }
  const pct = marginPercent(cost, sale);
  if (diff === null) return html`<span class="muted">—</span>`;
  const tone = diff.startsWith('-') ? 'neg' : /^[0.]+$/.test(diff) ? 'zero' : 'pos';
  return html`<span class=${`margin ${tone}`}>${diff}${pct !== null ? html` <small>(${pct} %)</small>` : null}</span>`;
}
