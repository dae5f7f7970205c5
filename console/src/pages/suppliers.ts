/**
 * Suppliers (CONTRACT §10): each supplier's health, request budget, wallet, last sync and callback
 * URL; add one (the service pings its credentials first: the verdict is shown as it comes), edit,
 * disable or enable, delete. Health comes from `GET /health` (every supplier, no token needed); the
 * rest from `GET /internal/suppliers`. Also the banner that names every supplier refusing our
 * credentials, shown on the dashboard and here.
 */
import { useState } from 'preact/hooks';
import { api, ApiError, enc } from '../api.js';
import { html } from '../html.js';
import { href } from '../router.js';
import type { Health, Supplier, SupplierAnswer, SupplierBody, SupplierHealth, SupplierList } from '../types.js';
import { ago, Badge, Card, type Column, Confirm, ErrorBox, ListTable, Money, Time, useInterval, useLoad } from '../ui.js';

const PROFILES = ['spec', 'dujiao-next'];
const SUPPLIER_COLUMNS: Column[] = ['Supplier', 'State', 'Upstream', 'Budget', ['Wallet', 'num'], 'Last sync', 'Callback URL', ''];

/**
 * A red banner for each supplier whose upstream refuses our credentials (`auth_failed` in `/health`):
 * orders and syncs at it fail until its key and secret are fixed.
 */
export function AuthFailedBanner({ health }: { health: Health | null | undefined }) {
  const failing = Object.entries(health?.suppliers ?? {}).filter(([, s]) => s.upstream === 'auth_failed');
  if (failing.length === 0) return null;
  return html`<div class="alert banner" role="alert" data-testid="auth-failed-banner">
    ${failing.map(
      ([name, s]) =>
        html`<p data-supplier=${name}>
          <strong>Supplier <code>${name}</code> refuses our credentials</strong>${s.error ? html` (${s.error})` : null}: its orders and
          syncs fail until its API key and secret are fixed${s.enabled ? '' : ' (it is disabled)'}.${' '}
          <a href=${href('/suppliers')}>Open the Suppliers page</a>
        </p>`,
    )}
  </div>`;
}

/** The suppliers as `GET /internal/suppliers` lists them; null when this service has no such route. */
async function loadSuppliers(): Promise<Supplier[] | null> {
  try {
    const list = await api.get<SupplierList>('/internal/suppliers');
    return list.items ?? list.suppliers ?? [];
  } catch (e) {
    if (e instanceof ApiError && e.status === 404 && e.code !== 'supplier_not_found') return null;
    throw e;
  }
}

function BudgetUse({ budget }: { budget: SupplierHealth['budget'] }) {
  if (budget.limit === null) return html`<span class="muted">off</span>`;
  const [requests, window] = budget.limit.split('/');
  return html`<span>${budget.used ?? '—'} / ${requests} <span class="muted small">in ${window}</span></span>
    ${budget.blocked_until ? html`<div class="small alert">blocked until <${Time} at=${budget.blocked_until} /></div>` : null}`;
}

function UpstreamCell({ h }: { h: SupplierHealth | undefined }) {
  if (!h) return html`<span class="muted">—</span>`;
  return html`<${Badge} value=${h.upstream} /> ${h.error ? html`<div class="small muted" data-field="error">${h.error}</div>` : null}
    ${h.checked_at ? html`<div class="small muted">pinged ${ago(h.checked_at)}</div>` : null}`;
}

function LastSyncCell({ h }: { h: SupplierHealth | undefined }) {
  const run = h?.last_sync;
  if (!run) return html`<span class="muted">none</span>`;
  return html`<${Badge} value=${run.status ?? 'unknown'} /> <span class="small">${run.mode}</span>
    <div class="small muted">${ago(run.finished_at ?? run.started_at)}</div>`;
}

/** The form of a new supplier, or of a change (`editing`: the name is fixed, a blank secret stays as it is). */
function SupplierForm({ editing, onSaved }: { editing?: Supplier; onSaved: (s: Supplier, verdict: string) => void }) {
  const [initial] = useState<SupplierBody>(() =>
    editing
      ? { base_url: editing.base_url, profile: editing.profile ?? 'spec' }
      : { name: '', base_url: '', api_key: '', api_secret: '', profile: 'spec' },
  );
  const [body, setBody] = useState<SupplierBody>(initial);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const field = (name: keyof SupplierBody, label: string, type = 'text', placeholder = '') =>
    html`<label
      >${label}
      <input
        name=${name}
        type=${type}
        autocomplete="off"
        placeholder=${placeholder}
        value=${(body[name] as string | undefined) ?? ''}
        onInput=${(e: Event) => setBody({ ...body, [name]: (e.target as HTMLInputElement).value })}
    /></label>`;
  const submit = async (ev: Event) => {
    ev.preventDefault();
    setBusy(true);
    setError(null);
    try {
      // a change sends only what the operator changed (the answered base URL hides any credentials in it)
      const sent: SupplierBody = Object.fromEntries(
        Object.entries(body).filter(([k, v]) => v !== '' && v !== undefined && (!editing || v !== initial[k as keyof SupplierBody])),
      );
      const saved = editing
        ? await api.patch<SupplierAnswer>(`/internal/suppliers/${enc(editing.name)}`, sent)
        : await api.post<SupplierAnswer>('/internal/suppliers', sent);
      const s = saved.supplier;
      const wallet = s.wallet?.balance ? ` · wallet ${s.wallet.balance} ${s.wallet.currency ?? ''}` : '';
      onSaved(s, `the ping reached ${s.name}: credentials accepted${wallet}`);
      if (!editing) setBody(initial);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="filters supplier-form" data-testid=${editing ? 'edit-supplier' : 'add-supplier'} onSubmit=${submit}>
    ${editing ? null : field('name', 'Name', 'text', 'e.g. second')} ${field('base_url', 'Base URL', 'url', 'https://…/api/v1/upstream')}
    ${field('api_key', 'API key', 'text', editing ? 'unchanged' : '')}
    ${field('api_secret', 'API secret', 'password', editing ? 'unchanged' : '')}
    <label
      >Profile
      <select
        name="profile"
        value=${body.profile}
        onChange=${(e: Event) => setBody({ ...body, profile: (e.target as HTMLSelectElement).value })}
      >
        ${PROFILES.map((p) => html`<option value=${p}>${p}</option>`)}
      </select></label
    >
    <button class="btn primary" type="submit" disabled=${busy}>${busy ? 'Pinging…' : editing ? 'Save' : 'Add supplier'}</button>
    <div class="verdict" data-testid="supplier-verdict"><${ErrorBox} error=${error} title="Not saved" /></div>
  </form>`;
}

type Pending = { kind: 'edit' | 'toggle' | 'delete'; supplier: Supplier } | null;

export function SuppliersPage() {
  const health = useLoad(() => api.get<Health>('/health'), []);
  const list = useLoad(loadSuppliers, []);
  const [pending, setPending] = useState<Pending>(null);
  const [verdict, setVerdict] = useState<string | null>(null);
  useInterval(() => void health.reload(), 10_000);
  const reload = () => Promise.all([health.reload(), list.reload()]);

  const byName = new Map((list.data ?? []).map((s) => [s.name, s]));
  const names = [...new Set([...Object.keys(health.data?.suppliers ?? {}), ...byName.keys()])];
  // /health lists the `UPSTREAM_*` supplier first
  const envName = Object.keys(health.data?.suppliers ?? {})[0];
  const isEnv = (name: string) => byName.get(name)?.managed_by_env ?? name === envName;
  const rows = names.map((name) => ({ name, s: byName.get(name) ?? { name }, h: health.data?.suppliers?.[name] }));
  const row = ({ name, s, h }: (typeof rows)[number]) => {
    const enabled = s.enabled ?? h?.enabled ?? true;
    const wallet = h?.wallet ?? (s.wallet?.balance ? s.wallet : null);
    return html`<tr data-supplier=${name} data-upstream=${h?.upstream ?? ''}>
      <td>
        <strong>${name}</strong>${isEnv(name) ? html` <${Badge} value="env" tone="info" />` : null}
        ${s.base_url ? html`<div class="small muted clip" title=${s.base_url}>${s.base_url}</div>` : null}
        ${s.api_key_hint ? html`<div class="small muted">key …${s.api_key_hint}</div>` : null}
      </td>
      <td><${Badge} value=${enabled ? 'enabled' : 'disabled'} /></td>
      <td data-field="upstream"><${UpstreamCell} h=${h} /></td>
      <td>${h ? html`<${BudgetUse} budget=${h.budget} />` : html`<span class="muted">—</span>`}</td>
      <td class="num" data-field="wallet">
        ${wallet ? html`<${Money} amount=${wallet.balance} currency=${wallet.currency} />` : html`<span class="muted">—</span>`}
      </td>
      <td><${LastSyncCell} h=${h} /></td>
      <td class="small">${s.callback_url ? html`<code>${s.callback_url}</code>` : html`<span class="muted">—</span>`}</td>
      <td class="nowrap">
        <a class="btn small" href=${href('/catalog', { supplier: name })}>SKUs</a>
        <a class="btn small" href=${href('/orders', { supplier: name })}>Orders</a>
        ${
          list.data && !isEnv(name)
            ? html`<button class="btn small" onClick=${() => setPending({ kind: 'edit', supplier: s })}>Edit</button>
                <button class="btn small" onClick=${() => setPending({ kind: 'toggle', supplier: { ...s, enabled } })}>
                  ${enabled ? 'Disable' : 'Enable'}
                </button>
                <button class="btn small danger" onClick=${() => setPending({ kind: 'delete', supplier: s })}>Delete</button>`
            : null
        }
      </td>
    </tr>`;
  };

  return html`<div class="page suppliers">
    <h1>Suppliers</h1>
    <${AuthFailedBanner} health=${health.data} />
    <${Card} title="Suppliers" actions=${html`<button class="btn" onClick=${() => void reload()}>Reload</button>`}>
      <${ListTable}
        testid="suppliers-table"
        what="suppliers"
        columns=${SUPPLIER_COLUMNS}
        items=${health.data ? rows : undefined}
        error=${health.error ?? list.error}
        loading=${!health.data && !health.error}
        row=${row}
      >
        ${
          list.data === null
            ? html`<p class="muted small" data-testid="suppliers-api-missing">
                This service does not offer <code>/internal/suppliers</code>: the suppliers are shown from <code>/health</code>.
              </p>`
            : null
        }
      <//>
    <//>
    ${
      list.data
        ? html`<${Card} title="Add a supplier">
            <p class="muted small">
              The service pings the credentials before it saves anything: a refusal is shown here and nothing is saved.
            </p>
            <${SupplierForm}
              onSaved=${(_: Supplier, v: string) => {
                setVerdict(v);
                void reload();
              }}
            />
            ${verdict ? html`<p class="alert ok" data-testid="supplier-saved">${verdict}</p>` : null}
          <//>`
        : null
    }
    ${
      pending?.kind === 'edit'
        ? html`<${Card}
            title=${`Edit ${pending.supplier.name}`}
            actions=${html`<button class="btn" onClick=${() => setPending(null)}>Cancel</button>`}
          >
            <p class="muted small">New credentials are pinged before they are saved; blank fields stay as they are.</p>
            <${SupplierForm}
              key=${pending.supplier.name}
              editing=${pending.supplier}
              onSaved=${(_: Supplier, v: string) => {
                setVerdict(v);
                setPending(null);
                void reload();
              }}
            />
          <//>`
        : null
    }
    ${
      pending?.kind === 'toggle'
        ? html`<${Confirm}
            title=${`${pending.supplier.enabled ? 'Disable' : 'Enable'} ${pending.supplier.name}`}
            confirmLabel=${pending.supplier.enabled ? 'Disable' : 'Enable'}
            danger=${pending.supplier.enabled}
            onConfirm=${async () => {
              await api.patch<SupplierAnswer>(`/internal/suppliers/${enc(pending.supplier.name)}`, { enabled: !pending.supplier.enabled });
              await reload();
            }}
            onClose=${() => setPending(null)}
          >
            <p>
              ${
                pending.supplier.enabled
                  ? 'No sync and no new order at this supplier (409 supplier_disabled); ' +
                    'its unfinished orders are still followed to the end.'
                  : 'Its syncs and new orders resume.'
              }
            </p>
          <//>`
        : null
    }
    ${
      pending?.kind === 'delete'
        ? html`<${Confirm}
            title=${`Delete ${pending.supplier.name}`}
            confirmLabel="Delete"
            danger=${true}
            onConfirm=${async () => {
              await api.delete<{ ok: true }>(`/internal/suppliers/${enc(pending.supplier.name)}`);
              await reload();
            }}
            onClose=${() => setPending(null)}
          >
            <p>Its SKUs are unlisted; its orders keep their history. Refused (supplier_busy) while it has unfinished orders.</p>
          <//>`
        : null
    }
  </div>`;
}
