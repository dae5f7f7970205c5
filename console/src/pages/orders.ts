/** Orders: a list filtered by supplier, status and stuck, newest first, and a jump to one order. */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';
import { href, navigate } from '../router.js';
import { ORDER_STATUSES, supplierOf, type OrderList } from '../types.js';
import { ago, Badge, Card, type Column, ListTable, Money, Time, useLoad } from '../ui.js';
import { SupplierFilter, useSupplierNames } from './supplier-filter.js';

const PAGE_SIZE = 50;
const ORDER_COLUMNS: Column[] = ['Order', 'Supplier', 'Status', 'SKU × qty', ['Amount', 'num'], 'Refund', 'Created', 'Updated'];

export function OrdersPage({ query }: { query: URLSearchParams }) {
  const status = query.get('status') ?? '';
  const stuck = query.get('stuck') === 'true';
  const supplier = query.get('supplier') ?? '';
  const suppliers = useSupplierNames();
  const page = Math.max(1, Number(query.get('page') ?? '1') || 1);
  const [jump, setJump] = useState('');
  const list = useLoad(
    () =>
      api.get<OrderList>('/internal/orders', {
        supplier: supplier || undefined,
        status: status || undefined,
        stuck: stuck || undefined,
        page,
        page_size: PAGE_SIZE,
      }),
    [supplier, status, stuck, page],
  );
  const go = (next: { supplier?: string; status?: string; stuck?: boolean; page?: number }) =>
    navigate(
      href('/orders', {
        supplier: next.supplier ?? supplier,
        status: next.status ?? status,
        stuck: next.stuck ?? stuck,
        page: next.page && next.page > 1 ? next.page : undefined,
      }),
    );
  const row = (o: OrderList['items'][number]) =>
    html`<tr data-order=${o.shop_order_no}>
      <td>
        <a href=${href(`/orders/${encodeURIComponent(o.shop_order_no)}`)}>${o.shop_order_no}</a
        >${o.stuck ? html` <${Badge} value="stuck" tone="warn" />` : null}
      </td>
      <td data-field="supplier">${supplierOf(o) ?? html`<span class="muted">—</span>`}</td>
      <td><${Badge} value=${o.status} /></td>
      <td>
        <a href=${href(`/catalog/${encodeURIComponent(o.sku_key ?? o.sku_code)}`)} title=${o.sku_key ?? undefined}
          ><code>${o.sku_code}</code></a
        >
        × ${o.quantity}
      </td>
      <td class="num"><${Money} amount=${o.amount} currency=${o.currency} /></td>
      <td>${o.refund_state === 'not_refundable' ? html`<span class="muted">—</span>` : html`<${Badge} value=${o.refund_state} />`}</td>
      <td><${Time} at=${o.created_at} /></td>
      <td><span title=${o.updated_at}>${ago(o.updated_at)}</span></td>
    </tr>`;

  return html`<div class="page orders">
    <h1>Orders</h1>
    <${Card}>
      <form
        class="filters"
        onSubmit=${(e: Event) => {
          e.preventDefault();
          if (jump.trim()) navigate(href(`/orders/${encodeURIComponent(jump.trim())}`));
        }}
      >
        <${SupplierFilter} names=${suppliers} value=${supplier} onChange=${(v: string) => go({ supplier: v, page: 1 })} />
        <label
          >Status
          <select name="status" value=${status} onChange=${(e: Event) => go({ status: (e.target as HTMLSelectElement).value, page: 1 })}>
            <option value="">any</option>
            ${ORDER_STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}
          </select>
        </label>
        <label class="check"
          ><input
            type="checkbox"
            name="stuck"
            checked=${stuck}
            onChange=${(e: Event) => go({ stuck: (e.target as HTMLInputElement).checked, page: 1 })}
          />
          stuck only</label
        >
        <span class="spacer"></span>
        <label
          >Open order
          <input
            name="jump"
            placeholder="shop_order_no"
            value=${jump}
            onInput=${(e: Event) => setJump((e.target as HTMLInputElement).value)}
          />
        </label>
        <button class="btn" type="submit">Open</button>
        <button class="btn" type="button" onClick=${() => void list.reload()} disabled=${list.loading}>Reload</button>
      </form>
    <//>
    <${Card}>
      <${ListTable}
        testid="orders-table"
        what="orders"
        columns=${ORDER_COLUMNS}
        items=${list.data?.items}
        error=${list.error}
        row=${row}
        empty=${`No orders${supplier ? ` at ${supplier}` : ''}${status ? ` with status ${status}` : ''}${stuck ? ' that are stuck' : ''}.`}
        paging=${list.data}
        onPage=${(p: number) => go({ page: p })}
        wrap=${false}
      />
    <//>
  </div>`;
}
