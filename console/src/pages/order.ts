/**
 * One order: its facts, upstream ids and amounts, an offer order's offer and route (one row per
 * attempt: supplier, SKU, outcome, error code), the delivered items (masked until revealed), its
 * timeline, and the operator's actions (refresh, resolve, cancel, refund) behind confirmations.
 */
import { useState } from 'preact/hooks';
import { api, enc } from '../api.js';
import { html } from '../html.js';
import { href } from '../router.js';
import { supplierOf, type Order, type OrderActionAnswer, type OrderAnswer, type OrderEvent, type OrderEvents } from '../types.js';
import { ago, Badge, Card, Confirm, ErrorBox, Facts, Loading, Money, Time, useInterval, useLoad } from '../ui.js';
import { OrderReconciliation } from './reconciliation.js';

type Action = 'cancel' | 'refund' | 'resolve' | null;

const FINISHED = new Set(['completed', 'canceled', 'refunded', 'partially_refunded', 'rejected']);
const NOT_CANCELABLE = new Set(['canceled', 'refunded', 'partially_refunded']);

function mask(s: string): string {
  return '•'.repeat(Math.min(24, Math.max(8, s.length)));
}

function Items({ order }: { order: Order }) {
  const [shown, setShown] = useState(false);
  const items = order.items ?? [];
  const data = order.fulfillment?.delivery_data;
  if (items.length === 0 && !data) {
    return html`<p class="muted" data-testid="no-items">
      ${order.fulfillment?.status === 'delivered' ? 'Delivered with no item lines.' : 'Nothing delivered yet.'}
    </p>`;
  }
  return html`<div class="items">
    <div class="row">
      <span class="muted small"
        >${items.length} item
        line${items.length === 1 ? '' : 's'}${
          order.fulfillment?.delivered_at ? html`, delivered <${Time} at=${order.fulfillment.delivered_at} />` : null
        }</span
      >
      <button class="btn small" onClick=${() => setShown(!shown)} aria-pressed=${shown}>${shown ? 'Hide items' : 'Reveal items'}</button>
    </div>
    <ol class=${`item-list ${shown ? 'shown' : 'masked'}`} data-testid="items">
      ${items.map((it) => html`<li><code>${shown ? it : mask(it)}</code></li>`)}
    </ol>
    ${
      data
        ? html`<p class="small muted">delivery data</p>
            <pre class="json">${shown ? JSON.stringify(data, null, 2) : '••••••••'}</pre>`
        : null
    }
  </div>`;
}

/** The state an event moved the order from: its badge, or "new" for the order's first event. */
function movedFrom(e: OrderEvent) {
  return e.from ? html`<${Badge} value=${e.from} />` : html`<span class="muted">new</span>`;
}

/** The state an event moved the order to: its badge, or "unchanged". */
function movedTo(e: OrderEvent) {
  return e.to ? html`<${Badge} value=${e.to} />` : html`<span class="muted">unchanged</span>`;
}

function Timeline({ events }: { events: OrderEvent[] }) {
  if (events.length === 0) return html`<p class="muted">No events recorded.</p>`;
  return html`<ol class="timeline" data-testid="timeline">
    ${events.map(
      (e) =>
        html`<li data-source=${e.source} data-to=${e.to ?? ''}>
          <div class="when"><${Time} at=${e.at} /></div>
          <div class="what">
            <${Badge} value=${e.source} tone="source" />
            ${e.kind ? html`<span class="kind">${e.kind.replace(/_/g, ' ')}</span>` : null}
            ${e.from || e.to ? html`<span class="move">${movedFrom(e)} → ${movedTo(e)}</span>` : null}
            ${
              e.detail && Object.keys(e.detail).length
                ? html`<div class="detail small">
                    ${Object.entries(e.detail).map(
                      ([k, v]) =>
                        html`<span><span class="muted">${k}</span> ${typeof v === 'object' ? JSON.stringify(v) : String(v)}</span>`,
                    )}
                  </div>`
                : null
            }
          </div>
        </li>`,
    )}
  </ol>`;
}

type RouteEntry = NonNullable<Order['route']>[number];

/** How an attempt ended, as a badge tone: `accepted` is the source that took the order. */
const OUTCOME_TONE: Record<string, string> = {
  accepted: 'good',
  rejected: 'bad',
  submit_unknown: 'warn',
  queued: 'warn',
  submitting: 'info',
};

/** An offer order's route: one row per attempt, where it went (supplier, SKU) and how it ended. */
function RouteTable({ route }: { route: RouteEntry[] }) {
  if (route.length === 0) return html`<p class="muted">No attempt recorded.</p>`;
  return html`<table class="table" data-testid="order-route">
    <thead>
      <tr>
        <th>Attempt</th>
        <th>Supplier</th>
        <th>SKU</th>
        <th>Outcome</th>
        <th>Error code</th>
      </tr>
    </thead>
    <tbody>
      ${route.map(
        (e) =>
          html`<tr data-attempt=${e.attempt}>
            <td data-field="attempt">${e.attempt}</td>
            <td data-field="supplier"><a href=${href('/orders', { supplier: e.supplier })}>${e.supplier}</a></td>
            <td data-field="sku_key">
              ${
                e.sku_key
                  ? html`<a href=${href(`/catalog/${encodeURIComponent(e.sku_key)}`)}><code>${e.sku_key}</code></a>`
                  : html`<span class="muted">—</span>`
              }
            </td>
            <td data-field="outcome"><${Badge} value=${e.outcome} tone=${OUTCOME_TONE[e.outcome]} /></td>
            <td data-field="error_code">${e.error_code ? html`<code>${e.error_code}</code>` : html`<span class="muted">—</span>`}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** An order the upstream showed an order for, after its attempt was closed here: settled with that upstream order only. */
const adoptable = (o: Order) => o.status === 'rejected' && o.anomaly === 'upstream_order_exists';

function ResolveForm({ order, value, onChange }: { order: Order; value: ResolveInput; onChange: (v: ResolveInput) => void }) {
  if (adoptable(order)) {
    return html`<div class="resolve-form">
      <p>
        The upstream showed an order for an attempt of this order that was closed here (its id is in the anomaly event below). Once you have
        checked it in the upstream's back office, the order follows it:
      </p>
      <input
        name="upstream_order_id"
        inputmode="numeric"
        placeholder="upstream order id"
        value=${value.upstreamOrderId}
        onInput=${(e: Event) => onChange({ ...value, kind: 'placed', upstreamOrderId: (e.target as HTMLInputElement).value })}
      />
    </div>`;
  }
  return html`<div class="resolve-form">
    <p>
      The outcome of attempt ${order.attempt} (sent as <code>${order.downstream_order_no}</code>) is unknown. Look it up in the upstream's
      back office, then settle it:
    </p>
    <label class="check"
      ><input
        type="radio"
        name="resolve-kind"
        value="placed"
        checked=${value.kind === 'placed'}
        onChange=${() => onChange({ ...value, kind: 'placed' })}
      />
      It was placed upstream, as order id</label
    >
    <input
      name="upstream_order_id"
      inputmode="numeric"
      placeholder="upstream order id"
      value=${value.upstreamOrderId}
      disabled=${value.kind !== 'placed'}
      onInput=${(e: Event) => onChange({ ...value, upstreamOrderId: (e.target as HTMLInputElement).value })}
    />
    <label class="check"
      ><input
        type="radio"
        name="resolve-kind"
        value="not_placed"
        checked=${value.kind === 'not_placed'}
        onChange=${() => onChange({ ...value, kind: 'not_placed' })}
      />
      It was not placed (the order becomes <code>rejected</code>, nothing charged)</label
    >
    <input
      name="reason"
      placeholder="reason"
      value=${value.reason}
      disabled=${value.kind !== 'not_placed'}
      onInput=${(e: Event) => onChange({ ...value, reason: (e.target as HTMLInputElement).value })}
    />
  </div>`;
}

interface ResolveInput {
  kind: 'placed' | 'not_placed';
  upstreamOrderId: string;
  reason: string;
}

function resolveReady(v: ResolveInput): boolean {
  return v.kind === 'placed' ? /^\d+$/.test(v.upstreamOrderId.trim()) && Number(v.upstreamOrderId) > 0 : v.reason.trim().length > 0;
}

export function OrderPage({ shopOrderNo }: { shopOrderNo: string }) {
  const base = `/internal/orders/${enc(shopOrderNo)}`;
  const order = useLoad(async () => (await api.get<OrderAnswer>(base)).order, [shopOrderNo]);
  const events = useLoad(async () => (await api.get<OrderEvents>(`${base}/events`)).events, [shopOrderNo]);
  const [action, setAction] = useState<Action>(null);
  const [refreshing, setRefreshing] = useState(false);
  const [actionError, setActionError] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [resolve, setResolve] = useState<ResolveInput>({ kind: 'placed', upstreamOrderId: '', reason: '' });

  const o = order.data;
  // An order on its way is re-read every few seconds (only from the local API).
  useInterval(
    () => {
      void order.reload();
      void events.reload();
    },
    o && !FINISHED.has(o.status) ? 5000 : null,
  );

  const apply = (next: Order, message: string) => {
    order.set(next);
    setNotice(message);
    setActionError(null);
    void events.reload();
  };
  const post = async (what: string, body: unknown = {}) => (await api.post<OrderActionAnswer>(`${base}/${what}`, body)).order;

  const refresh = async () => {
    setRefreshing(true);
    setNotice(null);
    try {
      const next = await post('refresh');
      apply(next, `Refreshed from the upstream: ${next.status}.`);
    } catch (e) {
      setActionError(e);
    } finally {
      setRefreshing(false);
    }
  };

  if (order.error && !o) {
    return html`<div class="page">
      <p class="back"><a href="#/orders">‹ Orders</a></p>
      <h1>Order ${shopOrderNo}</h1>
      <${ErrorBox} error=${order.error} />
    </div>`;
  }
  if (!o) return html`<div class="page"><${Loading} what="the order" /></div>`;

  const canCancel = !NOT_CANCELABLE.has(o.status);
  const canRefund = o.refund_state !== 'refunded';
  return html`<div class="page order" data-status=${o.status}>
    <p class="back"><a href="#/orders">‹ Orders</a></p>
    <div class="title-row">
      <h1>Order <code>${o.shop_order_no}</code></h1>
      <span data-testid="order-status"><${Badge} value=${o.status} /></span>
      ${o.stuck ? html`<${Badge} value="stuck" tone="warn" />` : null}
      <span class="spacer"></span>
      <div class="actions">
        <button class="btn" onClick=${refresh} disabled=${refreshing}>${refreshing ? 'Refreshing…' : 'Refresh'}</button>
        ${
          o.status === 'submit_unknown' || adoptable(o)
            ? html`<button class="btn primary" onClick=${() => setAction('resolve')}>Resolve…</button>`
            : null
        }
        <button class="btn danger" onClick=${() => setAction('cancel')} disabled=${!canCancel}>Cancel…</button>
        <button class="btn danger" onClick=${() => setAction('refund')} disabled=${!canRefund}>Refund…</button>
      </div>
    </div>
    ${notice ? html`<div class="alert ok" role="status">${notice}</div>` : null}
    <${ErrorBox} error=${actionError} />
    ${o.anomaly ? html`<div class="alert warn">Anomaly: ${o.anomaly}</div>` : null}
    ${o.error_code ? html`<div class="alert" data-testid="order-error"><code>${o.error_code}</code> ${o.error_message ?? ''}</div>` : null}

    <div class="grid two">
      <${Card} title="Order">
        <${Facts}
          rows=${[
            [
              'Supplier',
              supplierOf(o) ? html`<a href=${href('/orders', { supplier: supplierOf(o) })}>${supplierOf(o)}</a>` : null,
              'supplier',
            ],
            ...(o.offer
              ? ([['Offer', html`<a href=${href(`/offers/${encodeURIComponent(o.offer)}`)}><code>${o.offer}</code></a>`, 'offer']] as Array<
                  [string, unknown, string]
                >)
              : []),
            [
              'SKU',
              html`<a href=${href(`/catalog/${encodeURIComponent(o.sku_key ?? o.sku_code)}`)} title=${o.sku_key ?? undefined}
                ><code>${o.sku_code}</code></a
              >`,
              'sku_code',
            ],
            ['Quantity', String(o.quantity), 'quantity'],
            ['Amount', html`<${Money} amount=${o.amount} currency=${o.currency} />`, 'amount'],
            [
              'Refund',
              html`<${Badge}
                  value=${o.refund_state}
                />${o.refundable_amount ? html` <${Money} amount=${o.refundable_amount} currency=${o.currency} />` : null}`,
              'refund_state',
            ],
            ...(o.refunded_amount
              ? ([
                  ['Refunded by upstream', html`<${Money} amount=${o.refunded_amount} currency=${o.currency} />`, 'refunded_amount'],
                ] as Array<[string, unknown, string]>)
              : []),
            ...(o.refund_records.length
              ? ([
                  [
                    'Upstream refunds',
                    html`${o.refund_records.map(
                      (r) =>
                        html`<div>
                          <${Money} amount=${r.amount} currency=${r.currency ?? o.currency} />
                          <span class="muted small"
                            >${r.type ?? ''} ${r.created_at ? html`<${Time} at=${r.created_at} />` : ''} ${r.remark ?? ''}</span
                          >
                        </div>`,
                    )}`,
                    'refund_records',
                  ],
                ] as Array<[string, unknown, string]>)
              : []),
            ['Created', html`<${Time} at=${o.created_at} />`],
            ['Updated', html`<${Time} at=${o.updated_at} /> <span class="muted small">${ago(o.updated_at)}</span>`],
            ...(o.trace_id ? ([['Trace id', html`<code>${o.trace_id}</code>`]] as Array<[string, unknown]>) : []),
          ]}
        />
      <//>
      <${Card} title="Upstream">
        <${Facts}
          rows=${[
            ['Attempt', String(o.attempt), 'attempt'],
            ['Sent as (downstream_order_no)', html`<code>${o.downstream_order_no}</code>`, 'downstream_order_no'],
            ['Upstream order id', o.upstream_order_id !== null ? html`<code>${o.upstream_order_id}</code>` : null, 'upstream_order_id'],
            ['Upstream order no', o.upstream_order_no ? html`<code>${o.upstream_order_no}</code>` : null, 'upstream_order_no'],
            ['Fulfillment', html`${o.fulfillment?.type ?? '—'} · ${o.fulfillment?.status ?? '—'}`],
          ]}
        />
      <//>
    </div>

    ${
      o.offer
        ? html`<${Card} title=${`Route through offer ${o.offer}`}>
            <p class="muted small">
              Each attempt at one of the offer's sources, in order: the next source is tried only after a refusal before any charge.
            </p>
            <${RouteTable} route=${o.route ?? []} />
          <//>`
        : null
    }

    <${Card} title="Delivered items"><${Items} order=${o} /><//>

    <${OrderReconciliation} shopOrderNo=${o.shop_order_no} />

    <${Card} title="Timeline" actions=${html`<button class="btn small" onClick=${() => void events.reload()}>Reload</button>`}>
      <${ErrorBox} error=${events.error} />
      ${events.data ? html`<${Timeline} events=${events.data} />` : events.error ? null : html`<${Loading} />`}
    <//>

    ${
      action === 'cancel'
        ? html`<${Confirm}
            title=${`Cancel order ${o.shop_order_no}?`}
            confirmLabel="Cancel the order"
            danger
            onClose=${() => setAction(null)}
            onConfirm=${async () => apply(await post('cancel'), 'Canceled: the upstream agreed.')}
          >
            <p>The upstream is asked first; only its yes cancels the order here, and makes it refundable.</p>
          <//>`
        : null
    }
    ${
      action === 'refund'
        ? html`<${Confirm}
            title=${`Refund order ${o.shop_order_no}?`}
            confirmLabel="Record the refund"
            danger
            onClose=${() => setAction(null)}
            onConfirm=${async () => apply(await post('refund'), 'Refund recorded.')}
          >
            <p>
              ${
                o.refund_state === 'refundable'
                  ? html`Records the refund of <${Money} amount=${o.refundable_amount} currency=${o.currency} /> to the shop.`
                  : 'The order is first canceled upstream (the upstream must agree), then the refund is recorded.'
              }
            </p>
          <//>`
        : null
    }
    ${
      action === 'resolve'
        ? html`<${Confirm}
            title=${`Resolve order ${o.shop_order_no}`}
            confirmLabel="Resolve"
            onClose=${() => setAction(null)}
            canConfirm=${resolveReady(resolve)}
            onConfirm=${async () => {
              const body =
                resolve.kind === 'placed'
                  ? { upstream_order_id: Number(resolve.upstreamOrderId.trim()) }
                  : { not_placed: true, reason: resolve.reason.trim() };
              const next = await post('resolve', body);
              apply(next, `Resolved: ${next.status}.`);
            }}
          >
            <${ResolveForm} order=${o} value=${resolve} onChange=${setResolve} />
          <//>`
        : null
    }
  </div>`;
}
