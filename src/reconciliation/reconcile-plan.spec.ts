import {
  differenceApplied,
  firstReconcileAt,
  isScheduledStatus,
  nextReconcileAt,
  orderDifferences,
  parseReconcileAfter,
  RANGE_STATUSES,
  reconcileTickMs,
} from './reconcile-plan.js';

const H = 3_600_000;
const D = 24 * H;
const STEPS = [H, D, 7 * D];
const base = new Date('2026-11-01T00:00:00Z');
const at = (ms: number) => new Date(base.getTime() + ms);

describe('parseReconcileAfter', () => {
  it('reads comma-separated durations in every unit', () => {
    expect(parseReconcileAfter('1h,1d,7d')).toEqual(STEPS);
    expect(parseReconcileAfter(' 300ms , 1s,2m ')).toEqual([300, 1000, 120_000]);
  });

  it('reads off and 0 as no schedule', () => {
    expect(parseReconcileAfter('off')).toBeNull();
    expect(parseReconcileAfter('OFF')).toBeNull();
    expect(parseReconcileAfter('0')).toBeNull();
  });

  it('refuses what is not a strictly increasing list of durations from 1 ms to a year', () => {
    for (const bad of [
      '',
      '1h,',
      '1x',
      '1h,1h',
      '1d,1h',
      '0s',
      '366d',
      '1.5h',
      '-1h',
      '1h;1d',
      Array(11)
        .fill('1d')
        .map((d, i) => `${i + 1}${d.slice(1)}`)
        .join(','),
    ]) {
      expect(parseReconcileAfter(bad)).toEqual({ problem: expect.any(String) });
    }
  });
});

describe('the schedule', () => {
  it('plans an order found finished at its first step from then', () => {
    expect(firstReconcileAt(base, STEPS)).toEqual(at(H));
    expect(firstReconcileAt(base, [300, 1000])).toEqual(at(300));
    expect(firstReconcileAt(base, [])).toBeNull();
  });

  it('after a read, the next step later than it; none after the last', () => {
    expect(nextReconcileAt(base, STEPS, at(H))).toEqual(at(D));
    expect(nextReconcileAt(base, STEPS, at(H + 1))).toEqual(at(D));
    // a late read (the service was down) skips the steps it passed: one read for them
    expect(nextReconcileAt(base, STEPS, at(3 * D))).toEqual(at(7 * D));
    expect(nextReconcileAt(base, STEPS, at(7 * D))).toBeNull();
    expect(nextReconcileAt(base, STEPS, at(8 * D))).toBeNull();
  });

  it('thins out: the reads of an order read on time are its steps, each once', () => {
    const reads: Date[] = [];
    let due = firstReconcileAt(base, STEPS);
    while (due) {
      reads.push(due);
      due = nextReconcileAt(base, STEPS, due);
    }
    expect(reads).toEqual(STEPS.map(at));
  });

  it('ticks at a quarter of the first step, from 50 ms to 1 s', () => {
    expect(reconcileTickMs(STEPS)).toBe(1000);
    expect(reconcileTickMs([300, 1000])).toBe(75);
    expect(reconcileTickMs([10])).toBe(50);
  });

  it('reads finished orders only: scheduled ones that the upstream may still change, and every final state on demand', () => {
    expect(['delivered', 'completed', 'partially_refunded', 'partially_delivered'].every(isScheduledStatus)).toBe(true);
    expect(
      ['pending_payment', 'paid', 'fulfilling', 'canceled', 'refunded', 'rejected', 'submit_unknown', 'queued'].some(isScheduledStatus),
    ).toBe(false);
    expect(RANGE_STATUSES).toEqual(expect.arrayContaining(['canceled', 'refunded', 'delivered', 'completed']));
    expect(RANGE_STATUSES).not.toContain('rejected');
  });
});

describe('orderDifferences', () => {
  const local = { status: 'completed', amount: '10.00', refundedAmount: null };

  it('finds none when the read says what the order holds (amounts by value)', () => {
    expect(orderDifferences(local, { status: 'completed', amount: '10' })).toEqual([]);
    expect(orderDifferences(local, { status: 'completed', amount: '10.00', refunded_amount: '0.00' })).toEqual([]);
  });

  it('takes no field the read does not carry as a difference', () => {
    expect(orderDifferences(local, { status: 'completed' })).toEqual([]);
    expect(orderDifferences(local, { status: 'completed', amount: null, refunded_amount: null })).toEqual([]);
  });

  it('lists a refund made upstream: the status and the refunded amount', () => {
    expect(orderDifferences(local, { status: 'refunded', amount: '10.00', refunded_amount: '10.00' })).toEqual([
      { field: 'status', local: 'completed', upstream: 'refunded' },
      { field: 'refunded_amount', local: null, upstream: '10.00' },
    ]);
  });

  it('lists a partial refund and a changed amount', () => {
    expect(
      orderDifferences(
        { status: 'delivered', amount: '10.00', refundedAmount: '1.00' },
        { status: 'partially_refunded', amount: '9.50', refunded_amount: '2.5' },
      ),
    ).toEqual([
      { field: 'status', local: 'delivered', upstream: 'partially_refunded' },
      { field: 'amount', local: '10.00', upstream: '9.50' },
      { field: 'refunded_amount', local: '1.00', upstream: '2.5' },
    ]);
  });

  it('lists an amount the order never recorded', () => {
    expect(orderDifferences({ ...local, amount: null }, { status: 'completed', amount: '3.00' })).toEqual([
      { field: 'amount', local: null, upstream: '3.00' },
    ]);
  });

  it('tells whether the order now carries the upstream value of a difference', () => {
    const [status, refunded] = orderDifferences(local, { status: 'refunded', refunded_amount: '10.00' });
    expect(differenceApplied(status, { status: 'refunded', amount: '10.00', refundedAmount: '10.00' })).toBe(true);
    expect(differenceApplied(refunded, { status: 'refunded', amount: '10.00', refundedAmount: '10.0' })).toBe(true);
    // a report the poll's rules ignored (it would move the order back) left the order as it was
    const [back] = orderDifferences({ status: 'refunded', amount: '10.00', refundedAmount: '10.00' }, { status: 'completed' });
    expect(differenceApplied(back, { status: 'refunded', amount: '10.00', refundedAmount: '10.00' })).toBe(false);
  });
});
