/**
 * Dashboard: a red banner naming every supplier that refuses our credentials, the wallet, the last
 * sync, the orders needing a decision (`submit_unknown` and stuck), the upstream's request budget with
 * what the key carries and what reconciliation takes of it, the queued orders and the reconciliation
 * backlog (from `GET /health`), each supplier's state, orders by status, orders per day, the offer
 * orders' failovers by reason over the same days (`GET /internal/offer-failovers`) and sync durations.
 */
import { api } from '../api.js';
import { BarChart, type Bar } from '../charts.js';
import { html } from '../html.js';
import { href } from '../router.js';
import { ORDER_STATUSES, type Answer, type Health, type Order, type OrderList, type SyncRunList, type Wallet } from '../types.js';
import { ago, Badge, Card, durationMs, ErrorBox, formatDuration, Loading, Money, pickText, Time, useInterval, useLoad } from '../ui.js';
import { AuthFailedBanner } from './suppliers.js';

const DAYS = 14;
const MAX_ORDER_PAGES = 4;

type Failovers = Answer<'/internal/offer-failovers', 'get'>;

/** The first day of the dashboard's window (local midnight, DAYS − 1 days ago). */
function windowStart(): Date {
  const since = new Date();
  since.setHours(0, 0, 0, 0);
  since.setDate(since.getDate() - (DAYS - 1));
  return since;
}

/** The offer orders' failovers by reason over the window, as the database recorded them. */
const failoversByReason = () => api.get<Failovers>('/internal/offer-failovers', { since: windowStart().toISOString() });

function FailoverCard({ failovers }: { failovers: Failovers }) {
  return html`<p class="big"><span data-testid="failover-total">${failovers.total}</span> <span class="small">failovers</span></p>
    ${
      failovers.reasons.length === 0
        ? html`<p class="muted small">No offer order moved to another source in the window.</p>`
        : html`<table class="table" data-testid="failover-reasons">
            <thead>
              <tr>
                <th>Reason</th>
                <th>Failovers</th>
              </tr>
            </thead>
            <tbody>
              ${failovers.reasons.map(
                (r) =>
                  html`<tr data-reason=${r.reason}>
                    <td><code>${r.reason}</code></td>
                    <td data-field="count">${r.count}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    <p class="muted small">
      Offer orders moved to their next source after a refusal before any charge, since <${Time} at=${failovers.since} />.
    </p>`;
}

const dayKey = (d: Date) => `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;

async function ordersPerDay(): Promise<{ bars: Bar[]; partial: boolean }> {
  const since = windowStart();
  const counts = new Map<string, number>();
  let partial = false;
  for (let page = 1; page <= MAX_ORDER_PAGES; page++) {
    const list = await api.get<OrderList>('/internal/orders', { page, page_size: 500 });
    let older = false;
    for (const o of list.items) {
      const at = new Date(o.created_at);
      if (at < since) {
        older = true;
        continue;
      }
      const k = dayKey(at);
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    if (older || page * list.page_size >= list.total) break;
    if (page === MAX_ORDER_PAGES) partial = true;
  }
  const bars: Bar[] = [];
  for (let i = 0; i < DAYS; i++) {
    const d = new Date(since);
    d.setDate(since.getDate() + i);
    const k = dayKey(d);
    bars.push({ label: k.slice(5), value: counts.get(k) ?? 0, tone: 'info', title: `${k}: ${counts.get(k) ?? 0} orders` });
  }
  return { bars, partial };
}

async function statusCounts(): Promise<Array<[string, number]>> {
  return Promise.all(
    ORDER_STATUSES.map(async (status) => {
      const list = await api.get<OrderList>('/internal/orders', { status, page_size: 1 });
      return [status, list.total] as [string, number];
    }),
  );
}

async function needingDecision(): Promise<{ unknown: OrderList; stuck: OrderList }> {
  const [unknown, stuck] = await Promise.all([
    api.get<OrderList>('/internal/orders', { status: 'submit_unknown', page_size: 20 }),
    api.get<OrderList>('/internal/orders', { stuck: true, page_size: 20 }),
  ]);
  return { unknown, stuck };
}

function DecisionRows({ orders, why }: { orders: Order[]; why: string }) {
  return orders.map(
    (o) =>
      html`<tr>
        <td><a href=${href(`/orders/${encodeURIComponent(o.shop_order_no)}`)}>${o.shop_order_no}</a></td>
        <td><${Badge} value=${o.status} /></td>
        <td>${why}</td>
        <td><code>${o.sku_code}</code> × ${o.quantity}</td>
        <td><${Time} at=${o.updated_at} /> <span class="muted small">${ago(o.updated_at)}</span></td>
      </tr>`,
  );
}

/** `60/60s` → `{ requests: '60', window: '60s' }`. */
function splitLimit(limit: string): { requests: string; window: string } {
  const [requests, window] = limit.split('/');
  return { requests, window: window ?? '' };
}

/** The upstream's request budget of the API key, as `/health` reports it. */
function BudgetCard({ health }: { health: Health }) {
  const { budget, upstream } = health;
  if (budget.limit === null) {
    return html`<p class="big" data-testid="budget-use"><span class="small">off</span></p>
      <p class="muted small">No request budget is held (UPSTREAM_RATE_LIMIT is <code>off</code>).</p>
      ${
        budget.blocked_until
          ? html`<p class="alert small" data-testid="budget-blocked">
              <${Badge} value=${upstream.status} /> blocked until <${Time} at=${budget.blocked_until} /> (the upstream answered 429): this
              instance sends nothing until then, new orders are queued
            </p>`
          : null
      }`;
  }
  const { requests, window } = splitLimit(budget.limit);
  return html`<p class="big" data-testid="budget-use">
      ${budget.used ?? '—'} / ${requests} <span class="small">requests in ${window}</span>
    </p>
    ${budget.left !== null ? html`<p class="small" data-testid="budget-left">${budget.left} left in the window</p>` : null}
    ${
      budget.used === null
        ? html`<p class="muted small">The service does not report the window's count; the limit is <code>${budget.limit}</code>.</p>`
        : null
    }
    ${
      budget.blocked_until
        ? html`<p class="alert small" data-testid="budget-blocked">
            <${Badge} value=${upstream.status} /> blocked until <${Time} at=${budget.blocked_until} /> (the upstream answered 429): every
            upstream request waits, new orders are queued
          </p>`
        : html`<p class="muted small" data-testid="budget-blocked">not blocked</p>`
    }
    ${budget.capacity ? html`<${CapacityLines} capacity=${budget.capacity} />` : null}`;
}

type Capacity = NonNullable<Health['budget']['capacity']>;

/** What the key carries at the current mix, and what reconciliation takes of it (`budget.capacity`). */
function CapacityLines({ capacity }: { capacity: Capacity }) {
  const { reconcile } = capacity;
  return html`<p class="small" data-testid="budget-capacity">
      ${
        capacity.orders_per_minute !== null && capacity.requests_per_order !== null
          ? html`carries ≈ <strong>${capacity.orders_per_minute}</strong> orders a minute at ${capacity.requests_per_order} requests an
              order`
          : html`<span class="muted">no order in the window: the cost of an order is not known</span>`
      }
      <span class="muted"> (${capacity.requests_per_minute} requests a minute in all)</span>
    </p>
    <p class="small" data-testid="budget-reconcile">
      reconciliation: ${reconcile.last_window} of its ${reconcile.limit_per_window} a window
      ${
        reconcile.orders_per_day_full_schedule !== null
          ? html` · keeps the full schedule of ${reconcile.orders_per_day_full_schedule} finished orders a day`
          : null
      }
      ${reconcile.due !== null ? html` · <span class=${reconcile.due > 0 ? '' : 'muted'}>${reconcile.due} reads due</span>` : null}
    </p>`;
}

/** `95` → `1 min 35 s`. */
function age(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

/** Reconciliation's backlog: due reads not made yet and the age of the oldest (it falls behind when these grow). */
function BacklogCard({ health }: { health: Health }) {
  const { backlog, oldest_due_s: oldest } = health.reconciliation;
  return html`<p class="big">
      <a href=${href('/reconciliation')} data-testid="reconcile-backlog">${backlog ?? '—'}</a>
      <span class="small">reads due</span>
    </p>
    <p class=${`small ${oldest !== null && oldest > 300 ? 'alert warn' : 'muted'}`} data-testid="reconcile-backlog-age">
      ${oldest === null ? 'none waiting' : html`the oldest due for ${age(oldest)}`}
    </p>
    <p class="muted small">
      Finished orders read again from their supplier at the lowest priority: a growing backlog means it falls behind.
    </p>`;
}

/** Each supplier's upstream and wallet in one line (the Suppliers page has the rest). */
function SupplierLines({ health }: { health: Health }) {
  return html`<ul class="supplier-lines" data-testid="supplier-states">
    ${Object.entries(health.suppliers).map(
      ([name, s]) =>
        html`<li data-supplier=${name}>
          <a href=${href('/suppliers')}><strong>${name}</strong></a>
          <${Badge} value=${s.upstream} />${s.enabled ? null : html` <${Badge} value="disabled" />`}
          ${s.wallet ? html` <span class="small"><${Money} amount=${s.wallet.balance} currency=${s.wallet.currency} /></span>` : null}
        </li>`,
    )}
  </ul>`;
}

export function DashboardPage() {
  const health = useLoad(() => api.get<Health>('/health'), []);
  const wallet = useLoad(() => api.get<Wallet>('/internal/wallet'), []);
  const runs = useLoad(() => api.get<SyncRunList>('/internal/catalog/sync-runs', { page_size: 30 }), []);
  const counts = useLoad(statusCounts, []);
  const decision = useLoad(needingDecision, []);
  const perDay = useLoad(ordersPerDay, []);
  const failovers = useLoad(failoversByReason, []);
  useInterval(() => {
    void failovers.reload();
    void wallet.reload();
    void runs.reload();
    void counts.reload();
    void decision.reload();
    void perDay.reload();
  }, 30_000);
  // a block after a 429 lasts about half a minute: the budget is read more often
  useInterval(() => void health.reload(), 10_000);

  const last = runs.data?.items[0];
  const durations: Bar[] = (runs.data?.items ?? [])
    .filter((r) => r.finished_at)
    .slice(0, 20)
    .reverse()
    .map((r) => {
      const ms = durationMs(r.started_at, r.finished_at) ?? 0;
      return {
        label: new Date(r.started_at).toTimeString().slice(0, 5),
        value: ms / 1000,
        tone: r.status === 'failed' ? 'bad' : 'good',
        title: `${r.run_id} (${r.mode}, ${r.status}): ${formatDuration(ms)}`,
      };
    });
  const totalOrders = counts.data?.reduce((n, [, c]) => n + c, 0);
  const unknown = decision.data?.unknown;
  const stuck = decision.data?.stuck;
  const stuckOnly = (stuck?.items ?? []).filter((o) => o.status !== 'submit_unknown');

  return html`<div class="page dashboard">
    <h1>Dashboard</h1>
    <${AuthFailedBanner} health=${health.data} />
    <div class="grid three">
      <${Card} title="Upstream wallet" class="stat">
        ${
          wallet.error
            ? html`<${ErrorBox} error=${wallet.error} />`
            : !wallet.data
              ? html`<${Loading} />`
              : html` <p class="big" data-testid="wallet-balance">
                    <${Money} amount=${wallet.data.balance} currency=${wallet.data.currency} />
                  </p>
                  <p class="muted small">
                    ${
                      wallet.data.member_level
                        ? html`member level ${pickText(wallet.data.member_level.name) || wallet.data.member_level.slug} · `
                        : null
                    }checked
                    <${Time} at=${wallet.data.checked_at} />
                  </p>`
        }
      <//>
      <${Card} title="Last sync" class="stat">
        ${
          runs.error
            ? html`<${ErrorBox} error=${runs.error} />`
            : !runs.data
              ? html`<${Loading} />`
              : !last
                ? html`<p class="muted">No sync has run yet. <a href="#/sync">Start one</a>.</p>`
                : html` <p class="big" data-testid="last-sync"><${Badge} value=${last.status} /> <span class="small">${last.mode}</span></p>
                    <p class="small">
                      <${Time} at=${last.finished_at ?? last.started_at} />
                      <span class="muted"
                        >${ago(last.finished_at ?? last.started_at)} ·
                        ${formatDuration(durationMs(last.started_at, last.finished_at))}</span
                      >
                    </p>
                    <p class="small" data-testid="last-sync-changes">
                      ${last.skus_created} created · ${last.skus_changed} changed · ${last.skus_delisted} delisted · ${last.skus_relisted}
                      relisted
                    </p>
                    ${last.error ? html`<p class="alert small">${last.error}</p>` : null}`
        }
      <//>
      <${Card} title="Needs a decision" class="stat">
        ${
          decision.error
            ? html`<${ErrorBox} error=${decision.error} />`
            : !decision.data
              ? html`<${Loading} />`
              : html` <p class="big">
                    <a href=${href('/orders', { status: 'submit_unknown' })} data-testid="unknown-count">${unknown?.total ?? 0}</a>
                    <span class="small">submit unknown</span>
                  </p>
                  <p class="big">
                    <a href=${href('/orders', { stuck: true })} data-testid="stuck-count">${stuck?.total ?? 0}</a>
                    <span class="small">stuck</span>
                  </p>`
        }
      <//>
    </div>

    <div class="grid two">
      <${Card} title="Upstream budget" class="stat">
        ${
          health.error
            ? html`<${ErrorBox} error=${health.error} />`
            : !health.data
              ? html`<${Loading} />`
              : html`<${BudgetCard} health=${health.data} />`
        }
      <//>
      <${Card} title="Suppliers" class="stat">
        ${
          health.error
            ? html`<${ErrorBox} error=${health.error} />`
            : !health.data
              ? html`<${Loading} />`
              : html`<${SupplierLines} health=${health.data} />`
        }
      <//>
      <${Card} title="Reconciliation backlog" class="stat">
        ${
          health.error
            ? html`<${ErrorBox} error=${health.error} />`
            : !health.data
              ? html`<${Loading} />`
              : html`<${BacklogCard} health=${health.data} />`
        }
      <//>
      <${Card} title="Queued orders" class="stat">
        ${
          health.error
            ? html`<${ErrorBox} error=${health.error} />`
            : !health.data
              ? html`<${Loading} />`
              : html` <p class="big">
                    <a href=${href('/orders', { status: 'queued' })} data-testid="queued-count">${health.data.queued ?? '—'}</a>
                    <span class="small">queued</span>
                  </p>
                  <p class="muted small">Accepted and waiting for the request budget: placed in arrival order as soon as it allows.</p>`
        }
      <//>
    </div>

    <${Card} title=${`Orders by status${totalOrders !== undefined ? ` (${totalOrders})` : ''}`}>
      ${
        counts.error
          ? html`<${ErrorBox} error=${counts.error} />`
          : !counts.data
            ? html`<${Loading} />`
            : html` <ul class="status-tiles" data-testid="status-counts">
                ${counts.data.map(
                  ([s, n]) =>
                    html`<li class=${n ? '' : 'zero'}>
                      <a href=${href('/orders', { status: s })}><${Badge} value=${s} /><strong data-status=${s}>${n}</strong></a>
                    </li>`,
                )}
              </ul>`
      }
    <//>

    ${
      unknown && (unknown.items.length > 0 || stuckOnly.length > 0)
        ? html`<${Card} title="Orders needing a decision" class="decision">
            <table class="table" data-testid="decision-table">
              <thead>
                <tr>
                  <th>Order</th>
                  <th>Status</th>
                  <th>Why</th>
                  <th>SKU</th>
                  <th>Last change</th>
                </tr>
              </thead>
              <tbody>
                <${DecisionRows} orders=${unknown.items} why="outcome unknown: resolve it" />
                <${DecisionRows} orders=${stuckOnly} why="no progress: refresh or cancel" />
              </tbody>
            </table>
          <//>`
        : null
    }

    <div class="grid two">
      <${Card} title=${`Orders per day (last ${DAYS} days)`}>
        ${
          perDay.error
            ? html`<${ErrorBox} error=${perDay.error} />`
            : !perDay.data
              ? html`<${Loading} />`
              : html` <${BarChart} bars=${perDay.data.bars} label="orders per day" />
                  ${
                    perDay.data.partial
                      ? html`<p class="muted small">Counted over the ${MAX_ORDER_PAGES * 500} most recent orders.</p>`
                      : null
                  }`
        }
      <//>
      <${Card} title=${`Failovers by reason (last ${DAYS} days)`}>
        ${
          failovers.error
            ? html`<${ErrorBox} error=${failovers.error} />`
            : !failovers.data
              ? html`<${Loading} />`
              : html`<${FailoverCard} failovers=${failovers.data} />`
        }
      <//>
      <${Card} title="Sync durations (last 20 runs)">
        ${
          runs.error
            ? html`<${ErrorBox} error=${runs.error} />`
            : !runs.data
              ? html`<${Loading} />`
              : html`<${BarChart} bars=${durations} label="sync durations" format=${(v: number) => `${Number(v.toFixed(2))} s`} />`
        }
      <//>
    </div>
  </div>`;
}
