import { readFileSync } from 'node:fs';
import { MIGRATIONS_DIR } from '../database/migrator.js';
import { FINAL_STATES, describeDeleted, drain, noneDeleted, retentionCutoff, totalDeleted } from './retention-policy.js';

describe('retention cutoff', () => {
  it('is whole days of 24 hours before the database clock', () => {
    const now = new Date('2026-11-22T10:15:30.123Z');
    expect(retentionCutoff(now, 90).toISOString()).toBe('2026-08-24T10:15:30.123Z');
    expect(retentionCutoff(now, 1).toISOString()).toBe('2026-11-21T10:15:30.123Z');
    // across a daylight-saving change, still 24 h a day (the instant, not a local date)
    expect(retentionCutoff(new Date('2026-11-02T12:00:00Z'), 7).toISOString()).toBe('2026-10-26T12:00:00.000Z');
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses %p days (off is handled by the config, never as a cutoff)', (days) => {
    expect(() => retentionCutoff(new Date(), days)).toThrow(RangeError);
  });
});

describe('deleted counts', () => {
  it('sums and describes only the tables with deleted rows', () => {
    const c = { ...noneDeleted(), catalog_sku_changes: 12, outbox_events: 3 };
    expect(totalDeleted(c)).toBe(15);
    expect(describeDeleted(c)).toBe('catalog_sku_changes 12, outbox_events 3');
    expect(describeDeleted(noneDeleted())).toBe('nothing');
  });
});

describe('drain', () => {
  /** A table of `rows` rows, deleted `limit` at a time. */
  function table(rows: number) {
    let left = rows;
    const calls: number[] = [];
    const deleteBatch = async (limit: number) => {
      const n = Math.min(limit, left);
      left -= n;
      calls.push(n);
      return n;
    };
    return { deleteBatch, calls, left: () => left };
  }

  it('deletes batch after batch until one deletes fewer than its size', async () => {
    const t = table(12);
    const seen: number[] = [];
    expect(await drain(t.deleteBatch, { limit: 5, proceed: () => true, onBatch: (n) => seen.push(n) })).toBe('drained');
    expect(t.calls).toEqual([5, 5, 2]);
    expect(seen).toEqual([5, 5, 2]);
  });

  it('asks once more after a full last batch, and reports no empty batch', async () => {
    const t = table(10);
    const seen: number[] = [];
    expect(await drain(t.deleteBatch, { limit: 5, proceed: () => true, onBatch: (n) => seen.push(n) })).toBe('drained');
    expect(t.calls).toEqual([5, 5, 0]);
    expect(seen).toEqual([5, 5]);
  });

  it('stops before the next batch when told to (shutdown, lost claim)', async () => {
    const t = table(100);
    let allowed = 2;
    expect(await drain(t.deleteBatch, { limit: 5, proceed: async () => allowed-- > 0 })).toBe('stopped');
    expect(t.calls).toEqual([5, 5]);
    expect(t.left()).toBe(90);
  });

  it('passes a failed batch on', async () => {
    await expect(drain(async () => Promise.reject(new Error('boom')), { limit: 5, proceed: () => true })).rejects.toThrow('boom');
  });
});

describe('final states', () => {
  it('are the lists of the partial indexes that find old final rows', () => {
    const up = readFileSync(`${MIGRATIONS_DIR}20261122005000_retention.up.sql`, 'utf8');
    const list = (states: readonly string[]) => states.map((s) => `'${s}'`).join(', ');
    expect(up).toContain(`WHERE state IN (${list(FINAL_STATES.callback_inbox)})`);
    expect(up).toContain(`WHERE status IN (${list(FINAL_STATES.outbox_events)})`);
  });

  it('never include a state that is still in progress', () => {
    expect(FINAL_STATES.callback_inbox).not.toContain('pending');
    expect(FINAL_STATES.outbox_events).not.toContain('pending');
    expect(FINAL_STATES.catalog_sync_runs).not.toContain('running');
  });
});
