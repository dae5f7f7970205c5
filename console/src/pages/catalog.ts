/** Catalog: SKUs with their supplier, cost, sale price, margin, stock and availability, filtered like the API. */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { loadCategories, Margin, skuTitle } from '../catalog-data.js';
import { html } from '../html.js';
import { href, navigate } from '../router.js';
import { supplierOf, type Sku, type SkuList } from '../types.js';
import { ago, Badge, Card, type Column, ListTable, Money, useLoad } from '../ui.js';
import { SupplierFilter, useSupplierNames } from './supplier-filter.js';

const PAGE_SIZE = 100;
const SKU_COLUMNS: Column[] = [
  'SKU',
  'Supplier',
  'Product',
  'Category',
  ['Cost', 'num'],
  ['Sale price', 'num'],
  ['Margin', 'num'],
  'Stock',
  'State',
  'Updated',
];

export function CatalogPage({ query }: { query: URLSearchParams }) {
  const supplier = query.get('supplier') ?? '';
  const suppliers = useSupplierNames();
  const categoryId = query.get('category_id') ?? '';
  const listed = query.get('listed') ?? '';
  const available = query.get('available') ?? '';
  const changedSince = query.get('changed_since') ?? '';
  const page = Math.max(1, Number(query.get('page') ?? '1') || 1);
  const [jump, setJump] = useState('');
  const categories = useLoad(loadCategories, []);
  const list = useLoad(
    () =>
      api.get<SkuList>('/internal/catalog/skus', {
        supplier: supplier || undefined,
        category_id: categoryId || undefined,
        listed: listed || undefined,
        available: available || undefined,
        changed_since: changedSince ? new Date(changedSince).toISOString() : undefined,
        page,
        page_size: PAGE_SIZE,
      }),
    [supplier, categoryId, listed, available, changedSince, page],
  );
  const names = new Map((categories.data ?? []).map((c) => [c.id, c.name]));
  const state = {
    supplier,
    category_id: categoryId,
    listed,
    available,
    changed_since: changedSince,
    page: undefined as number | undefined,
  };
  const go = (patch: Partial<typeof state>) => navigate(href('/catalog', { ...state, ...patch }));
  const select = (name: string, value: string, label: string) =>
    html`<label
      >${label}
      <select name=${name} value=${value} onChange=${(e: Event) => go({ [name]: (e.target as HTMLSelectElement).value })}>
        <option value="">any</option>
        <option value="true">yes</option>
        <option value="false">no</option>
      </select></label
    >`;
  const row = (s: Sku) =>
    html`<tr data-sku=${s.sku_code} data-sku-key=${s.sku_key}>
      <td>
        <a href=${href(`/catalog/${encodeURIComponent(s.sku_key)}`)} title=${s.sku_key}><code>${s.sku_code}</code></a>
      </td>
      <td data-field="supplier">${supplierOf(s) ?? html`<span class="muted">—</span>`}</td>
      <td class="title" title=${skuTitle(s)}>${skuTitle(s)}</td>
      <td class="clip" title=${names.get(Number(s.category_id)) ?? ''}>${names.get(Number(s.category_id)) ?? s.category_id}</td>
      <td class="num"><${Money} amount=${s.cost_price} /></td>
      <td class="num" data-field="sale_price"><${Money} amount=${s.sale_price} currency=${s.currency} /></td>
      <td class="num"><${Margin} cost=${s.cost_price} sale=${s.sale_price} /></td>
      <td class="nowrap">
        <${Badge} value=${s.stock_status} />${s.stock_status !== 'unlimited' ? html` <span class="small">${s.stock_quantity}</span>` : null}
      </td>
      <td>
        ${
          s.available ? html`<${Badge} value="available" tone="good" />` : html`<${Badge} value="unavailable" tone="bad" />`
        }${s.listed ? null : html` <${Badge} value="unlisted" tone="muted" />`}
      </td>
      <td class="nowrap" title=${s.updated_at}>${ago(s.updated_at)}</td>
    </tr>`;

  return html`<div class="page catalog">
    <h1>Catalog</h1>
    <${Card}>
      <form
        class="filters"
        onSubmit=${(e: Event) => {
          e.preventDefault();
          if (jump.trim()) navigate(href(`/catalog/${encodeURIComponent(jump.trim())}`));
        }}
      >
        <${SupplierFilter} names=${suppliers} value=${supplier} onChange=${(v: string) => go({ supplier: v })} />
        <label
          >Category
          <select
            name="category_id"
            value=${categoryId}
            onChange=${(e: Event) => go({ category_id: (e.target as HTMLSelectElement).value })}
          >
            <option value="">all</option>
            ${(categories.data ?? []).map(
              (c) =>
                html`<option value=${String(c.id)}>${'\u00a0\u00a0'.repeat(c.depth)}${c.name}${c.listed ? '' : ' (unlisted)'}</option>`,
            )}
          </select>
        </label>
        ${select('listed', listed, 'Listed')} ${select('available', available, 'Available')}
        <label
          >Changed since
          <input
            type="datetime-local"
            name="changed_since"
            value=${changedSince}
            onChange=${(e: Event) => go({ changed_since: (e.target as HTMLInputElement).value })}
          />
        </label>
        <span class="spacer"></span>
        <label
          >Open SKU
          <input
            name="jump"
            placeholder="sku_key or sku_code"
            value=${jump}
            onInput=${(e: Event) => setJump((e.target as HTMLInputElement).value)}
        /></label>
        <button class="btn" type="submit">Open</button>
      </form>
    <//>
    <${Card}>
      <${ListTable}
        testid="skus-table"
        what="SKUs"
        columns=${SKU_COLUMNS}
        items=${list.data?.items}
        error=${list.error}
        row=${row}
        empty="No SKUs match."
        paging=${list.data}
        onPage=${(p: number) => go({ page: p })}
      />
    <//>
  </div>`;
}
