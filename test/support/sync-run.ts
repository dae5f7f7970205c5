import type { toSyncRunResponse } from '../../src/catalog/catalog.responses.js';

/** A catalog sync run as the internal API shows it (`GET /internal/catalog/sync-runs/{run_id}`): the mapper's own type. */
export type SyncRunView = ReturnType<typeof toSyncRunResponse>;
