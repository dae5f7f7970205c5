/** Sync runs: the list with counts and durations; start a sync and watch its progress. */
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, enc } from '../api.js';
import { html } from '../html.js';
import type { StartSyncAnswer, SyncRun, SyncRunAnswer, SyncRunList } from '../types.js';
import { ago, Badge, Card, durationMs, ErrorBox, formatDuration, Loading, Pager, Time, useInterval, useLoad } from '../ui.js';

const PAGE_SIZE = 50;

function Progress({ run }: { run: SyncRun }) {
  const pct =
    run.pages_total > 0 ? Math.min(100, Math.round((run.pages_done / run.pages_total) * 100)) : run.status === 'running' ? 0 : 100;
  const elapsed = durationMs(run.started_at, run.finished_at ?? new Date().toISOString());
  return html`<div class="progress-box" data-testid="sync-progress" data-status=${run.status}>
    <div class="row">
      <${Badge} value=${run.status} />
      <code class="small">${run.run_id}</code>
      <span class="small">${run.mode}${run.trigger ? ` · ${run.trigger}` : ''}</span>
      <span class="spacer"></span>
      <span class="small">${formatDuration(elapsed)}</span>
    </div>
    <div class="progress" role="progressbar" aria-valuemin="0" aria-valuemax="100" aria-valuenow=${pct}>
      <div class=${`fill ${run.status}`} style=${`width:${pct}%`}></div>
    </div>
    <p class="small">
      ${[
        html`pages ${run.pages_done} / ${run.pages_total || '?'}`,
        html`${run.products_seen} products seen`,
        html`<strong>${run.skus_created}</strong> created`,
        html`<strong>${run.skus_changed}</strong> changed`,
        html`<strong>${run.skus_delisted}</strong> delisted`,
        html`<strong>${run.skus_relisted}</strong> relisted`,
      ].flatMap((part, i) => (i ? [' · ', part] : [part]))}
    </p>
    ${run.error ? html`<p class="alert small">${run.error}</p>` : null}
  </div>`;
}

export function SyncPage() {
  const [page, setPage] = useState(1);
  const list = useLoad(() => api.get<SyncRunList>('/internal/catalog/sync-runs', { page, page_size: PAGE_SIZE }), [page]);
  const [mode, setMode] = useState('');
  const [starting, setStarting] = useState(false);
  const [startError, setStartError] = useState<unknown>(null);
  const [watched, setWatched] = useState<SyncRun | null>(null);
  const [watchId, setWatchId] = useState<string | null>(null);

  // A run already going when the page opens is watched too.
  useEffect(() => {
    const running = list.data?.items.find((r) => r.status === 'running');
    if (running && !watchId) setWatchId(running.run_id);
  }, [list.data]);

  const poll = async () => {
    if (!watchId) return;
    try {
      const run = (await api.get<SyncRunAnswer>(`/internal/catalog/sync-runs/${enc(watchId)}`)).run;
      setWatched(run);
      if (run.status !== 'running') void list.reload();
    } catch (e) {
      setStartError(e);
    }
  };
  useEffect(() => {
    void poll();
  }, [watchId]);
  useInterval(() => void poll(), watchId && (!watched || watched.status === 'running') ? 1000 : null);

  const start = async (ev: Event) => {
    ev.preventDefault();
    setStarting(true);
    setStartError(null);
    try {
      const body = await api.post<StartSyncAnswer>('/internal/catalog/sync', mode ? { mode } : {});
      setWatched(null);
      setWatchId(body.run_id);
      void list.reload();
    } catch (e) {
      setStartError(e);
      if (e instanceof ApiError && e.code === 'sync_in_progress' && e.body?.run_id) {
        setWatched(null);
        setWatchId(e.body.run_id);
      }
    } finally {
      setStarting(false);
    }
  };

  const anyError = (list.data?.items ?? []).some((r) => r.error);
  return html`<div class="page sync">
    <h1>Sync runs</h1>
    <${Card} title="Start a sync">
      <form class="filters" onSubmit=${start}>
        <label
          >Mode
          <select name="mode" value=${mode} onChange=${(e: Event) => setMode((e.target as HTMLSelectElement).value)}>
            <option value="">as planned (SYNC_MODE)</option>
            <option value="full">full</option>
            <option value="incremental">incremental</option>
          </select>
        </label>
        <button class="btn primary" type="submit" disabled=${starting || watched?.status === 'running'}>
          ${starting ? 'Starting…' : 'Start sync'}
        </button>
      </form>
      <${ErrorBox} error=${startError} />
      ${watched ? html`<${Progress} run=${watched} />` : watchId ? html`<${Loading} what="the run" />` : null}
    <//>
    <${Card} title="Runs">
      <${ErrorBox} error=${list.error} />
      ${!list.data && !list.error ? html`<${Loading} what="the runs" />` : null}
      ${
        list.data
          ? html`<div class="table-wrap">
                <table class="table" data-testid="runs-table">
                  <thead>
                    <tr>
                      <th>Run</th>
                      <th>Status · mode</th>
                      <th>Started</th>
                      <th class="num">Duration</th>
                      <th class="num">Pages</th>
                      <th class="num">Products</th>
                      <th class="num">Created</th>
                      <th class="num">Changed</th>
                      <th class="num">Delisted</th>
                      <th class="num">Relisted</th>
                      ${anyError ? html`<th>Error</th>` : null}
                    </tr>
                  </thead>
                  <tbody>
                    ${
                      list.data.items.length === 0
                        ? html`<tr>
                            <td colspan="10" class="muted">No sync has run yet.</td>
                          </tr>`
                        : null
                    }
                    ${list.data.items.map(
                      (r) =>
                        html`<tr data-run=${r.run_id} class=${r.run_id === watchId ? 'watched' : ''}>
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
                          <td class="nowrap">
                            <${Badge} value=${r.status} /><br /><span class="small">${r.mode}</span
                            >${r.trigger ? html`<span class="muted small"> · ${r.trigger}</span>` : null}
                          </td>
                          <td><${Time} at=${r.started_at} /><br /><span class="muted small">${ago(r.started_at)}</span></td>
                          <td class="num">${formatDuration(durationMs(r.started_at, r.finished_at))}</td>
                          <td class="num">${r.pages_done} / ${r.pages_total}</td>
                          <td class="num">${r.products_seen}</td>
                          <td class="num">${r.skus_created}</td>
                          <td class="num">${r.skus_changed}</td>
                          <td class="num">${r.skus_delisted}</td>
                          <td class="num">${r.skus_relisted}</td>
                          ${anyError ? html`<td class="error-cell">${r.error ?? ''}</td>` : null}
                        </tr>`,
                    )}
                  </tbody>
                </table>
              </div>
              <${Pager} page=${list.data.page} pageSize=${list.data.page_size} total=${list.data.total} onPage=${setPage} />`
          : null
      }
    <//>
  </div>`;
}
