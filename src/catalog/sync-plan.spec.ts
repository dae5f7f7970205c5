import { INCREMENTAL_SAFETY_WINDOW_MS, planPass, type PlanInputs } from './sync-plan.js';

const H = 3_600_000;
const now = new Date('2026-01-01T12:00:00Z');
const ago = (ms: number) => new Date(now.getTime() - ms);
const base: PlanInputs = {
  configured: 'auto',
  now,
  fullEveryMs: 6 * H,
  lastCompleteAt: ago(H / 4),
  lastFullAt: ago(2 * H),
  filterRefusedAt: null,
};

describe('planPass', () => {
  it('auto: incremental since the last complete run minus the safety window', () => {
    const p = planPass(base);
    expect(p.mode).toBe('incremental');
    expect(p.updatedAfter?.getTime()).toBe(ago(H / 4).getTime() - INCREMENTAL_SAFETY_WINDOW_MS);
  });

  it('auto: full when no run completed yet, or no full pass within SYNC_FULL_EVERY', () => {
    expect(planPass({ ...base, lastCompleteAt: null, lastFullAt: null })).toMatchObject({ mode: 'full', updatedAfter: null });
    expect(planPass({ ...base, lastFullAt: null })).toMatchObject({ mode: 'full' });
    expect(planPass({ ...base, lastFullAt: ago(6 * H) })).toMatchObject({ mode: 'full' });
    expect(planPass({ ...base, lastFullAt: ago(6 * H - 1) })).toMatchObject({ mode: 'incremental' });
  });

  it('auto remembers a refused filter; SYNC_MODE=incremental tries again', () => {
    expect(planPass({ ...base, filterRefusedAt: ago(H / 4) }).mode).toBe('full');
    expect(planPass({ ...base, configured: 'incremental', filterRefusedAt: ago(H / 4) }).mode).toBe('incremental');
  });

  it('auto tries a refused filter again once the refusal is SYNC_FULL_EVERY old, and still makes a full pass every SYNC_FULL_EVERY', () => {
    // Refused 6 h ago; the full passes made since (because of it) are recent.
    expect(planPass({ ...base, filterRefusedAt: ago(6 * H - 1), lastFullAt: ago(H / 4) })).toMatchObject({
      mode: 'full',
      reason: 'the upstream refused updated_after last time',
    });
    const retry = planPass({ ...base, filterRefusedAt: ago(6 * H), lastFullAt: ago(H / 4) });
    expect(retry).toMatchObject({ mode: 'incremental', reason: expect.stringMatching(/trying it again/) });
    expect(retry.updatedAfter?.getTime()).toBe(ago(H / 4).getTime() - INCREMENTAL_SAFETY_WINDOW_MS);
    // A full pass that is due comes first.
    expect(planPass({ ...base, filterRefusedAt: ago(7 * H), lastFullAt: ago(6 * H) }).mode).toBe('full');
  });

  it('SYNC_MODE=full and a requested full pass are always full', () => {
    expect(planPass({ ...base, configured: 'full' })).toMatchObject({ mode: 'full', reason: 'SYNC_MODE=full' });
    expect(planPass({ ...base, requested: 'full' })).toMatchObject({ mode: 'full', reason: 'full pass requested' });
  });

  it('a requested incremental pass is incremental even when a full one is due, but needs a complete run', () => {
    expect(planPass({ ...base, requested: 'incremental', lastFullAt: ago(100 * H) }).mode).toBe('incremental');
    expect(planPass({ ...base, configured: 'full', requested: 'incremental' }).mode).toBe('incremental');
    expect(planPass({ ...base, requested: 'incremental', lastCompleteAt: null }).mode).toBe('full');
  });

  it('SYNC_MODE=incremental still makes a full pass every SYNC_FULL_EVERY', () => {
    expect(planPass({ ...base, configured: 'incremental', lastFullAt: ago(7 * H) }).mode).toBe('full');
  });
});
