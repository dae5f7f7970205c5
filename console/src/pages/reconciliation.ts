/**
 * Reconciliation (CONTRACT §5): start a run over a range of order creation times and watch its
 * progress, the runs with their counts, and the differences found between finished orders and the
 * upstream's read of them (by a run or by the schedule), filterable by order and by run. An order's
 * own differences are listed on its page by `OrderReconciliation`.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, enc } from '../api.js';
import { html } from '../html.js';
import { href, navigate } from '../router.js';
import type {
  ReconciliationItem,
  ReconciliationItemList,
  ReconciliationRun,
  ReconciliationRunAnswer,
  ReconciliationRunList,
  StartReconciliationAnswer,
  StartReconciliationBody,
} from '../types.js';
import { ago, Badge, Card, durationMs, ErrorBox, formatDuration, Loading, Money, Pager, Time, useInterval, useLoad } from '../ui.js';

const RUNS_PAGE_SIZE = 20;
const ITEMS_PAGE_SIZE = 50;
const DAY_MS = 24 * 60 * 60 * 1000;
/** The order fields whose values are money (decimal strings, shown as they come). */
const MONEY_FIELDS = new Set<string>(['amount', 'refunded_amount']);

// ------------------------------------------------------------------------------------ the range

const pad = (n: number) => String(n).padStart(2, '0');

/** A `datetime-local` value (`2026-11-22T14:03`) for an instant, in the browser's time zone. */
function toLocalInput(d: Date): string {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** The instant a `datetime-local` value names in the browser's time zone, as RFC 3339; null when empty or invalid. */
function fromLocalInput(value: string): string | null {
  if (!value) return null;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

/**
 * The last 24 hours: `to` is the next whole minute (the inputs have minute precision, so an order
 * created in the current minute is inside the range), `from` a day before it.
 */
function lastDay(): { from: string; to: string } {
  const to = new Date(Math.ceil(Date.now() / 60_000) * 60_000);
  return { from: toLocalInput(new Date(to.getTime() - DAY_MS)), to: toLocalInput(to) };
}

// ------------------------------------------------------------------------------------- the runs

function percent(run: ReconciliationRun): number {
  if (run.orders_total > 0) return Math.min(100, Math.round((run.orders_done / run.orders_total) * 100));
  return run.status === 'running' ? 0 : 100;
}

function Bar({ run }: { run: ReconciliationRun }) {
  const pct = percent(run);
  return html`<div
    class="progress"
    role="progressbar"
    aria-valuemin="0"
    aria-valuemax="100"
    aria-valuenow=${pct}
    title=${`${run.orders_done} of ${run.orders_total} orders`}
  >
    <div class=${`fill ${run.status}`} style=${`width:${pct}%`}></div>
  </div>`;
}

function Progress({ run }: { run: ReconciliationRun }) {
  const elapsed = durationMs(run.started_at, run.finished_at ?? new Date().toISOString());
  return html`<div class="progress-box" data-testid="reconciliation-progress" data-status=${run.status} data-run=${run.run_id}>
    <div class="row">
      <${Badge} value=${run.status} />
      <code class="small">${run.run_id}</code>
      <span class="small">orders created <${Time} at=${run.from} /> → <${Time} at=${run.to} /></span>
      <span class="spacer"></span>
      <span class="small">${formatDuration(elapsed)}</span>
    </div>
    <${Bar} run=${run} />
    <p class="small">
      ${[
        html`orders <strong data-field="orders_done">${run.orders_done}</strong> / ${run.orders_total}`,
        html`<strong data-field="differences">${run.differences}</strong> difference${run.differences === 1 ? '' : 's'}`,
        html`<strong data-field="orders_failed">${run.orders_failed}</strong> failed`,
      ].flatMap((part, i) => (i ? [' · ', part] : [part]))}
    </p>
    ${run.error ? html`<p class="alert small">${run.error}</p>` : null}
  </div>`;
}

// -------------------------------------------------------------------------------------- the items

function Value({ field, value }: { field: string; value: string | null }) {
  if (value === null) return html`<span class="muted">—</span>`;
  if (field === 'status') return html`<${Badge} value=${value} />`;
  if (MONEY_FIELDS.has(field)) return html`<${Money} amount=${value} />`;
  return html`<code>${value}</code>`;
}

function ItemRows({ items, showOrder, onRun }: { items: ReconciliationItem[]; showOrder: boolean; onRun?: (runId: string) => void }) {
  return items.map(
    (i) =>
      html`<tr data-item=${i.id} data-order=${i.shop_order_no} data-field=${i.field}>
        ${showOrder ? html`<td><a href=${href(`/orders/${encodeURIComponent(i.shop_order_no)}`)}>${i.shop_order_no}</a></td>` : null}
        <td><code>${i.field}</code></td>
        <td class="nowrap">
          <span data-value="local"><${Value} field=${i.field} value=${i.local} /></span> →
          <span data-value="upstream"><${Value} field=${i.field} value=${i.upstream} /></span>
        </td>
        <td data-value="applied">
          ${
            i.applied
              ? html`<${Badge} value="yes" tone="good" />`
              : html`<span title="a report that would move the order back is not applied"><${Badge} value="no" tone="warn" /></span>`
          }
        </td>
        <td>
          ${
            i.run_id
              ? onRun
                ? html`<button class="btn link small" onClick=${() => onRun(i.run_id!)} title="only this run's differences">
                    <code>${i.run_id}</code>
                  </button>`
                : html`<a href=${href('/reconciliation', { run: i.run_id })}><code>${i.run_id}</code></a>`
              : html`<span class="muted">schedule</span>`
          }
        </td>
        <td><${Time} at=${i.detected_at} /><br /><span class="muted small">${ago(i.detected_at)}</span></td>
      </tr>`,
  );
}

const ITEM_HEAD = (showOrder: boolean) =>
  html`<thead>
    <tr>
      ${showOrder ? html`<th>Order</th>` : null}
      <th>Field</th>
      <th>Local → upstream</th>
      <th>Applied</th>
      <th>Found by</th>
      <th>Detected</th>
    </tr>
  </thead>`;

/** An order's differences found by reconciliation (the order page's section). */
export function OrderReconciliation({ shopOrderNo }: { shopOrderNo: string }) {
  const list = useLoad(
    () => api.get<ReconciliationItemList>('/internal/reconciliation/items', { shop_order_no: shopOrderNo, page_size: 100 }),
    [shopOrderNo],
  );
  return html`<${Card}
    title="Reconciliation"
    actions=${html`<a class="btn small" href=${href('/reconciliation', { order: shopOrderNo })}>All differences</a>`}
  >
    <${ErrorBox} error=${list.error} />
    ${!list.data && !list.error ? html`<${Loading} />` : null}
    ${
      list.data
        ? list.data.items.length === 0
          ? html`<p class="muted" data-testid="no-reconciliation">The upstream's reads of this order matched it.</p>`
          : html`<div class="table-wrap">
                <table class="table" data-testid="order-reconciliation">
                  ${ITEM_HEAD(false)}
                  <tbody>
                    <${ItemRows} items=${list.data.items} showOrder=${false} />
                  </tbody>
                </table>
              </div>
              ${
                list.data.total > list.data.items.length
                  ? html`<p class="small muted">${list.data.items.length} of ${list.data.total}: see all differences.</p>`
                  : null
              }`
        : null
    }
  <//>`;
}

// --------------------------------------------------------------------------------------- the page

export function ReconciliationPage({ query }: { query: URLSearchParams }) {
  const orderFilter = query.get('order') ?? '';
  const runFilter = query.get('run') ?? '';
  const page = Math.max(1, Number(query.get('page') ?? '1') || 1);
  const go = (next: { order?: string; run?: string; page?: number }) =>
    navigate(
      href('/reconciliation', {
        order: next.order ?? orderFilter,
        run: next.run ?? runFilter,
        page: next.page && next.page > 1 ? next.page : undefined,
      }),
    );

  const [runsPage, setRunsPage] = useState(1);
  const runs = useLoad(
    () => api.get<ReconciliationRunList>('/internal/reconciliation/runs', { page: runsPage, page_size: RUNS_PAGE_SIZE }),
    [runsPage],
  );
  const items = useLoad(
    () =>
      api.get<ReconciliationItemList>('/internal/reconciliation/items', {
        shop_order_no: orderFilter || undefined,
        run_id: runFilter || undefined,
        page,
        page_size: ITEMS_PAGE_SIZE,
      }),
    [orderFilter, runFilter, page],
  );

  const [range, setRange] = useState(lastDay);
  const [starting, setStarting] = useState(false);
  const [startError, setStartError] = useState<unknown>(null);
  const [watched, setWatched] = useState<ReconciliationRun | null>(null);
  const [watchId, setWatchId] = useState<string | null>(null);
  const [orderInput, setOrderInput] = useState(orderFilter);
  const [runInput, setRunInput] = useState(runFilter);
  useEffect(() => setOrderInput(orderFilter), [orderFilter]);
  useEffect(() => setRunInput(runFilter), [runFilter]);

  // A run already going when the page opens is watched too.
  useEffect(() => {
    const running = runs.data?.items.find((r) => r.status === 'running');
    if (running && !watchId) setWatchId(running.run_id);
  }, [runs.data]);

  const poll = async () => {
    if (!watchId) return;
    try {
      const run = (await api.get<ReconciliationRunAnswer>(`/internal/reconciliation/runs/${enc(watchId)}`)).run;
      const wasRunning = watched?.run_id === run.run_id && watched.status === 'running';
      setWatched(run);
      // the list and the differences follow the run while it runs, and once more when it ends
      if (run.status === 'running' || wasRunning) {
        void runs.reload();
        void items.reload();
      }
    } catch (e) {
      setStartError(e);
    }
  };
  useEffect(() => {
    void poll();
  }, [watchId]);
  useInterval(() => void poll(), watchId && (!watched || watched.status === 'running') ? 1000 : null);

  const from = fromLocalInput(range.from);
  const to = fromLocalInput(range.to);
  const rangeProblem = !from || !to ? 'Give both ends of the range.' : Date.parse(to) < Date.parse(from) ? '“To” is before “from”.' : null;

  const start = async (ev: Event) => {
    ev.preventDefault();
    if (!from || !to || rangeProblem) return;
    setStarting(true);
    setStartError(null);
    try {
      const body: StartReconciliationBody = { from, to };
      const started = await api.post<StartReconciliationAnswer>('/internal/reconciliation', body);
      setWatched(null);
      setWatchId(started.run_id);
      void runs.reload();
    } catch (e) {
      setStartError(e);
      // 409 reconciliation_in_progress names the run that is going: watch that one
      if (e instanceof ApiError && e.code === 'reconciliation_in_progress' && e.body?.run_id) {
        setWatched(null);
        setWatchId(e.body.run_id);
      }
    } finally {
      setStarting(false);
    }
  };

  const anyError = (runs.data?.items ?? []).some((r) => r.error);
  const filtered = orderFilter !== '' || runFilter !== '';
  return html`<div class="page reconciliation">
    <h1>Reconciliation</h1>
    <p class="muted">
      Finished orders are read again from the upstream (on a schedule that thins out with age, or here for a range of creation times); each
      difference in status, amount or refunded amount is applied by the rules of a poll, listed below and sent to the shop.
    </p>
    <${Card} title="Reconcile a range">
      <form class="filters" onSubmit=${start} data-testid="reconciliation-form">
        <label
          >Orders created from
          <input
            type="datetime-local"
            name="from"
            value=${range.from}
            onInput=${(e: Event) => setRange({ ...range, from: (e.target as HTMLInputElement).value })}
          />
        </label>
        <label
          >to
          <input
            type="datetime-local"
            name="to"
            value=${range.to}
            onInput=${(e: Event) => setRange({ ...range, to: (e.target as HTMLInputElement).value })}
          />
        </label>
        <button class="btn" type="button" onClick=${() => setRange(lastDay())}>Last 24 h</button>
        <button class="btn primary" type="submit" disabled=${starting || rangeProblem !== null || watched?.status === 'running'}>
          ${starting ? 'Starting…' : 'Start reconciliation'}
        </button>
        ${rangeProblem ? html`<span class="small muted">${rangeProblem}</span>` : null}
      </form>
      <${ErrorBox} error=${startError} />
      ${watched ? html`<${Progress} run=${watched} />` : watchId ? html`<${Loading} what="the run" />` : null}
    <//>

    <${Card} title="Runs">
      <${ErrorBox} error=${runs.error} />
      ${!runs.data && !runs.error ? html`<${Loading} what="the runs" />` : null}
      ${
        runs.data
          ? html`<div class="table-wrap">
                <table class="table" data-testid="reconciliation-runs">
                  <thead>
                    <tr>
                      <th>Run</th>
                      <th>Status</th>
                      <th>Orders created</th>
                      <th>Started</th>
                      <th class="num">Duration</th>
                      <th>Progress</th>
                      <th class="num">Differences</th>
                      <th class="num">Failed</th>
                      ${anyError ? html`<th>Error</th>` : null}
                    </tr>
                  </thead>
                  <tbody>
                    ${
                      runs.data.items.length === 0
                        ? html`<tr>
                            <td colspan="8" class="muted">No reconciliation run yet.</td>
                          </tr>`
                        : null
                    }
                    ${runs.data.items.map(
                      (r) =>
                        html`<tr data-run=${r.run_id} data-status=${r.status} class=${r.run_id === watchId ? 'watched' : ''}>
                          <td>
                            <button
                              class="btn link small"
                              onClick=${() => {
                                setWatched(null);
                                setWatchId(r.run_id);
                              }}
                              title="show progress"
                            >
                              <code>${r.run_id}</code>
                            </button>
                          </td>
                          <td><${Badge} value=${r.status} /></td>
                          <td class="small"><${Time} at=${r.from} /> →<br /><${Time} at=${r.to} /></td>
                          <td><${Time} at=${r.started_at} /><br /><span class="muted small">${ago(r.started_at)}</span></td>
                          <td class="num">${formatDuration(durationMs(r.started_at, r.finished_at))}</td>
                          <td style="min-width:140px">
                            <${Bar} run=${r} /><span class="small">${r.orders_done} / ${r.orders_total}</span>
                          </td>
                          <td class="num">
                            ${
                              r.differences > 0
                                ? html`<a href=${href('/reconciliation', { run: r.run_id })} title="this run's differences"
                                    >${r.differences}</a
                                  >`
                                : '0'
                            }
                          </td>
                          <td class="num">${r.orders_failed > 0 ? html`<strong class="bad">${r.orders_failed}</strong>` : '0'}</td>
                          ${anyError ? html`<td class="error-cell">${r.error ?? ''}</td>` : null}
                        </tr>`,
                    )}
                  </tbody>
                </table>
              </div>
              <${Pager} page=${runs.data.page} pageSize=${runs.data.page_size} total=${runs.data.total} onPage=${setRunsPage} />`
          : null
      }
    <//>

    <${Card} title="Differences">
      <form
        class="filters"
        onSubmit=${(e: Event) => {
          e.preventDefault();
          go({ order: orderInput.trim(), run: runInput.trim(), page: 1 });
        }}
      >
        <label
          >Order
          <input
            name="order"
            placeholder="shop_order_no"
            value=${orderInput}
            onInput=${(e: Event) => setOrderInput((e.target as HTMLInputElement).value)}
          />
        </label>
        <label
          >Run
          <input
            name="run"
            placeholder="run_id"
            size="30"
            value=${runInput}
            onInput=${(e: Event) => setRunInput((e.target as HTMLInputElement).value)}
          />
        </label>
        <button class="btn" type="submit">Filter</button>
        ${filtered ? html`<button class="btn" type="button" onClick=${() => go({ order: '', run: '', page: 1 })}>Clear</button>` : null}
        <span class="spacer"></span>
        <button class="btn" type="button" onClick=${() => void items.reload()} disabled=${items.loading}>Reload</button>
      </form>
      <${ErrorBox} error=${items.error} />
      ${!items.data && !items.error ? html`<${Loading} what="the differences" />` : null}
      ${
        items.data
          ? html`<div class="table-wrap">
                <table class="table" data-testid="reconciliation-items">
                  ${ITEM_HEAD(true)}
                  <tbody>
                    ${
                      items.data.items.length === 0
                        ? html`<tr>
                            <td colspan="6" class="muted">
                              No
                              differences${orderFilter ? ` for order ${orderFilter}` : ''}${runFilter ? ` found by run ${runFilter}` : ''}.
                            </td>
                          </tr>`
                        : null
                    }
                    <${ItemRows} items=${items.data.items} showOrder=${true} onRun=${(run: string) => go({ run, page: 1 })} />
                  </tbody>
                </table>
              </div>
              <${Pager}
                page=${items.data.page}
                pageSize=${items.data.page_size}
                total=${items.data.total}
                onPage=${(p: number) => go({ page: p })}
              />`
          : null
      }
    <//>
  </div>`;
}
