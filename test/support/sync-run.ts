import type { AxiosInstance } from 'axios';
import type { toSyncRunResponse } from '../../src/catalog/catalog.responses.js';
import { waitFor } from './wait.js';

/** A catalog sync run as the internal API shows it (`GET /internal/catalog/sync-runs/{run_id}`): the mapper's own type. */
export type SyncRunView = ReturnType<typeof toSyncRunResponse>;

/** The run once it is no longer `running` (read through the internal API). */
export async function waitRun(http: AxiosInstance, runId: string, timeoutMs = 60_000): Promise<SyncRunView> {
  const read = async () => {
    const r = await http.get(`/internal/catalog/sync-runs/${runId}`);
    if (r.status !== 200) throw new Error(`GET sync-runs/${runId}: HTTP ${r.status}`);
    return (r.data as { run: SyncRunView }).run;
  };
  return waitFor(read, (run) => run.status !== 'running', `run ${runId}`, timeoutMs);
}

/** Starts a sync run of `mode` through the internal API (202 expected) and waits for its end. */
export async function runSync(http: AxiosInstance, mode: 'full' | 'incremental'): Promise<SyncRunView> {
  const started = await http.post('/internal/catalog/sync', { mode });
  if (started.status !== 202) throw new Error(`POST /internal/catalog/sync: HTTP ${started.status} ${JSON.stringify(started.data)}`);
  return waitRun(http, (started.data as { run_id: string }).run_id);
}
