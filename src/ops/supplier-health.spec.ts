import {
  backlogAgeSeconds,
  failedPingStatus,
  supplierUpstreamState,
  UPSTREAM_RANK,
  worstIndex,
  type UpstreamState,
} from './supplier-health.js';

describe('supplier health', () => {
  it('calls a refusal of our credentials auth_failed, any other failure down', () => {
    expect(failedPingStatus(401)).toBe('auth_failed');
    expect(failedPingStatus(403)).toBe('auth_failed');
    expect(failedPingStatus(500)).toBe('down');
    expect(failedPingStatus(429)).toBe('down');
    expect(failedPingStatus(null)).toBe('down');
    expect(failedPingStatus(undefined)).toBe('down');
  });

  it('shows a blocked key as rate_limited, except when our credentials were refused', () => {
    expect(supplierUpstreamState(null, false)).toBe('unknown');
    expect(supplierUpstreamState(null, true)).toBe('rate_limited');
    expect(supplierUpstreamState('up', false)).toBe('up');
    expect(supplierUpstreamState('up', true)).toBe('rate_limited');
    expect(supplierUpstreamState('down', true)).toBe('rate_limited');
    expect(supplierUpstreamState('down', false)).toBe('down');
    expect(supplierUpstreamState('auth_failed', true)).toBe('auth_failed');
  });

  it('finds the worst state, the first of equals', () => {
    const order: UpstreamState[] = ['up', 'unknown', 'rate_limited', 'down', 'auth_failed'];
    for (let i = 1; i < order.length; i++) expect(UPSTREAM_RANK[order[i]]).toBeGreaterThan(UPSTREAM_RANK[order[i - 1]]);
    expect(worstIndex([])).toBe(-1);
    expect(worstIndex(['up'])).toBe(0);
    expect(worstIndex(['up', 'auth_failed', 'down'])).toBe(1);
    expect(worstIndex(['down', 'up', 'down'])).toBe(0);
    expect(worstIndex(['up', 'unknown'])).toBe(1);
  });

  it('ages the backlog by its oldest due read, in whole seconds', () => {
    const now = new Date('2026-11-29T12:00:00Z');
    expect(backlogAgeSeconds(null, now)).toBeNull();
    expect(backlogAgeSeconds(new Date('2026-11-29T11:58:30.500Z'), now)).toBe(89);
    expect(backlogAgeSeconds(new Date('2026-11-29T12:00:05Z'), now)).toBe(0);
  });
});
