import {
  MAX_RESOLVE_TRIES,
  nextStep,
  planCallback,
  planCallbacks,
  planStep,
  readShows,
  type CallbackClaim,
  type CallbackOrderFacts,
  type ClaimGroup,
  type ClaimOrder,
  type WorkDone,
} from './callback-plan.js';

const FULFILLMENT = {
  type: 'auto',
  status: 'delivered',
  payload: 'CODE-1\nCODE-2',
  delivery_data: null,
  delivered_at: '2026-12-01T10:00:00Z',
};

const claim = (c: Partial<CallbackClaim> = {}): CallbackClaim => ({
  upstreamOrderId: 7,
  upstreamOrderNo: 'UP-7',
  downstreamOrderNo: 'SHOP-1',
  status: 'paid',
  fulfillment: null,
  ...c,
});
const order = (o: Partial<CallbackOrderFacts> = {}): CallbackOrderFacts => ({
  status: 'pending_payment',
  upstreamOrderId: 7,
  attempt: 1,
  operationInProgress: false,
  named: { attemptNo: 1, status: 'accepted' },
  ...o,
});

describe('planCallback: whatever the trust', () => {
  it.each(['verified', 'confirm'] as const)('%s: an unknown order is stored, never applied', (trust) => {
    expect(planCallback(claim(), null, trust)).toEqual({ kind: 'store', reason: 'unknown_order' });
  });

  it.each(['verified', 'confirm'] as const)(
    '%s: an upstream order the order does not follow is checked upstream, never applied',
    (trust) => {
      // an earlier attempt, closed here
      expect(
        planCallback(
          claim({ upstreamOrderId: 8, status: 'delivered', fulfillment: FULFILLMENT }),
          order({ attempt: 2, named: { attemptNo: 1, status: 'rejected' } }),
          trust,
        ),
      ).toEqual({ kind: 'check_untracked' });
      // an upstream order besides the one the order follows
      expect(planCallback(claim({ upstreamOrderId: 8 }), order(), trust)).toEqual({ kind: 'check_untracked' });
      // an attempt in flight waits first
      expect(
        planCallback(claim({ upstreamOrderId: 8 }), order({ upstreamOrderId: null, named: { attemptNo: 1, status: 'submitting' } }), trust),
      ).toEqual({ kind: 'wait', reason: 'attempt_in_flight' });
    },
  );

  it.each(['verified', 'confirm'] as const)("%s: another attempt's callback is stored, never applied", (trust) => {
    // the followed upstream order, but another attempt's number
    expect(planCallback(claim({ status: 'canceled' }), order({ attempt: 2, named: { attemptNo: 1, status: 'accepted' } }), trust)).toEqual({
      kind: 'store',
      reason: 'other_attempt',
    });
  });

  it.each(['verified', 'confirm'] as const)('%s: an attempt in flight or a cancel in progress: the callback waits', (trust) => {
    expect(
      planCallback(claim(), order({ status: 'submitting', upstreamOrderId: null, named: { attemptNo: 1, status: 'submitting' } }), trust),
    ).toEqual({
      kind: 'wait',
      reason: 'attempt_in_flight',
    });
    expect(planCallback(claim(), order({ operationInProgress: true }), trust)).toEqual({ kind: 'wait', reason: 'operation_in_progress' });
  });

  it.each(['verified', 'confirm'] as const)('%s: a submit_unknown attempt is resolved by its number, whatever the claim', (trust) => {
    for (const c of [claim(), claim({ status: 'delivered', fulfillment: FULFILLMENT })]) {
      expect(
        planCallback(
          c,
          order({ status: 'submit_unknown', upstreamOrderId: null, named: { attemptNo: 1, status: 'submit_unknown' } }),
          trust,
        ),
      ).toEqual({ kind: 'resolve' });
    }
  });
});

describe('planCallback: verified', () => {
  it('a delivering state with its fulfillment is applied, items included, no read', () => {
    for (const status of ['partially_delivered', 'delivered', 'completed']) {
      expect(planCallback(claim({ status, fulfillment: FULFILLMENT }), order({ status: 'fulfilling' }), 'verified')).toEqual({
        kind: 'apply',
        reports: [{ status, order_no: 'UP-7', fulfillment: FULFILLMENT }],
      });
    }
  });

  it('pending_payment, paid, fulfilling and canceled are status moves, no read', () => {
    for (const status of ['pending_payment', 'paid', 'fulfilling', 'canceled']) {
      expect(planCallback(claim({ status }), order(), 'verified')).toEqual({ kind: 'apply', reports: [{ status, order_no: 'UP-7' }] });
    }
    // a callback without a number names the order by the upstream order it follows
    expect(planCallback(claim({ downstreamOrderNo: null }), order({ named: null }), 'verified')).toMatchObject({ kind: 'apply' });
  });

  it('a delivering state without its fulfillment, a refund state or an unknown status costs a read', () => {
    for (const status of ['partially_delivered', 'delivered', 'completed'])
      expect(planCallback(claim({ status }), order(), 'verified')).toEqual({ kind: 'read', deliver: true });
    for (const status of ['refunded', 'partially_refunded', 'on_hold'])
      expect(planCallback(claim({ status }), order(), 'verified')).toEqual({ kind: 'read', deliver: false });
  });
});

describe('planCallback: confirm', () => {
  it('never applies the claim: an early claim brings the next poll closer, any other is read', () => {
    for (const status of ['pending_payment', 'paid', 'fulfilling'])
      expect(planCallback(claim({ status }), order(), 'confirm')).toEqual({ kind: 'hint' });
    expect(planCallback(claim({ status: 'delivered', fulfillment: FULFILLMENT }), order(), 'confirm')).toEqual({
      kind: 'read',
      deliver: true,
    });
    for (const status of ['canceled', 'refunded'])
      expect(planCallback(claim({ status }), order(), 'confirm')).toEqual({ kind: 'read', deliver: false });
  });
});

describe('planCallbacks: the callbacks of one order claimed together', () => {
  it('applied together when every one can be', () => {
    const p = planCallbacks([claim({ status: 'paid' }), claim({ status: 'delivered', fulfillment: FULFILLMENT })], order(), 'verified');
    expect(p).toEqual({
      kind: 'apply',
      reports: [
        { status: 'paid', order_no: 'UP-7' },
        { status: 'delivered', order_no: 'UP-7', fulfillment: FULFILLMENT },
      ],
    });
  });

  it('one read answers them all when any needs one', () => {
    expect(planCallbacks([claim({ status: 'delivered' }), claim({ status: 'completed' })], order(), 'verified')).toEqual({
      kind: 'read',
      deliver: true,
    });
    expect(planCallbacks([claim({ status: 'paid' }), claim({ status: 'refunded' })], order(), 'verified')).toEqual({
      kind: 'read',
      deliver: false,
    });
    expect(
      planCallbacks(
        [claim({ status: 'paid' }), claim({ status: 'delivered', fulfillment: FULFILLMENT }), claim({ status: 'refunded' })],
        order(),
        'verified',
      ),
    ).toEqual({
      kind: 'read',
      deliver: true,
    });
  });

  it('confirm: a hint only when every claim is early', () => {
    expect(planCallbacks([claim({ status: 'paid' }), claim({ status: 'fulfilling' })], order(), 'confirm')).toEqual({ kind: 'hint' });
    expect(planCallbacks([claim({ status: 'paid' }), claim({ status: 'delivered' })], order(), 'confirm')).toEqual({
      kind: 'read',
      deliver: true,
    });
  });

  it('what the facts decide holds for all', () => {
    expect(planCallbacks([claim(), claim({ status: 'delivered' })], null, 'verified')).toEqual({ kind: 'store', reason: 'unknown_order' });
    expect(planCallbacks([claim(), claim({ status: 'delivered' })], order({ operationInProgress: true }), 'verified')).toEqual({
      kind: 'wait',
      reason: 'operation_in_progress',
    });
    expect(planCallbacks([claim({ upstreamOrderId: 8 }), claim({ upstreamOrderId: 8, status: 'delivered' })], order(), 'verified')).toEqual(
      {
        kind: 'check_untracked',
      },
    );
  });
});

describe('readShows: a read that answers a callback claimed before it', () => {
  it('shows the same status, or a later one the claim does not contradict, with the items of a delivered state', () => {
    expect(readShows({ status: 'paid', deliveredAt: null }, 'paid')).toBe(true);
    expect(readShows({ status: 'delivered', deliveredAt: new Date() }, 'paid')).toBe(true);
    // a delivered state without its items shows nothing
    expect(readShows({ status: 'delivered', deliveredAt: null }, 'paid')).toBe(false);
    // a partial state may come again with more: never shown by an earlier read of it
    expect(readShows({ status: 'partially_delivered', deliveredAt: new Date() }, 'partially_delivered')).toBe(false);
    // an earlier status does not show a later claim; a claim the current status contradicts is not shown
    expect(readShows({ status: 'paid', deliveredAt: null }, 'delivered')).toBe(false);
    expect(readShows({ status: 'canceled', deliveredAt: null }, 'delivered')).toBe(false);
    expect(readShows({ status: 'paid', deliveredAt: null }, 'no_such_status')).toBe(false);
  });
});

const group = (g: Partial<ClaimGroup> = {}): ClaimGroup => ({ upstreamOrderId: 7, number: 'SHOP-1', claimed: ['paid'], tries: 0, ...g });
const looked = (o: Partial<ClaimOrder> = {}): ClaimOrder => ({ shopOrderNo: 'SHOP-1', status: 'paid', attempt: 1, opUntil: null, ...o });
const FIRST = { lastPass: false, aborted: false };
const LAST = { lastPass: true, aborted: false };
const ATTEMPT = { downstreamOrderNo: 'SHOP-1', status: 'rejected' };

describe("planStep: the drain's first step for a plan", () => {
  it('no local order: recorded unknown_order with a warning, never applied', () => {
    expect(planStep({ kind: 'store', reason: 'unknown_order' }, group(), null)).toEqual({
      kind: 'record',
      record: {
        kind: 'finish',
        state: 'unknown_order',
        outcome: 'no local order has this upstream order or number',
        warn: 'callback for an unknown order (upstream 7): recorded, not applied',
      },
    });
  });

  it("another attempt's callback is ignored", () => {
    expect(planStep({ kind: 'store', reason: 'other_attempt' }, group({ number: null }), looked({ attempt: 2 }))).toEqual({
      kind: 'record',
      record: {
        kind: 'finish',
        state: 'ignored',
        outcome: "another attempt's callback (no number): order SHOP-1 is at attempt 2; not applied",
      },
    });
  });

  it('a wait lasts until the op mark ends (a cancel), else the inbox retries it', () => {
    const until = new Date('2026-12-01T10:00:00Z');
    expect(planStep({ kind: 'wait', reason: 'operation_in_progress' }, group(), looked({ opUntil: until }))).toEqual({
      kind: 'record',
      record: { kind: 'wait', until, outcome: 'operation_in_progress' },
    });
    expect(planStep({ kind: 'wait', reason: 'operation_in_progress' }, group(), looked())).toMatchObject({ record: { until: 'retry' } });
    expect(planStep({ kind: 'wait', reason: 'attempt_in_flight' }, group(), looked({ opUntil: until }))).toEqual({
      kind: 'record',
      record: { kind: 'wait', until: 'retry', outcome: 'attempt_in_flight' },
    });
  });

  it('a hint for an order at or past every claimed state is late, no read; else the next poll comes sooner', () => {
    expect(planStep({ kind: 'hint' }, group({ claimed: ['pending_payment', 'paid'] }), looked({ status: 'fulfilling' }))).toEqual({
      kind: 'record',
      record: {
        kind: 'finish',
        state: 'applied',
        outcome: 'late: order SHOP-1 is fulfilling here (claimed pending_payment, paid); not read',
      },
    });
    expect(planStep({ kind: 'hint' }, group({ claimed: ['paid'] }), looked({ status: 'paid' }))).toMatchObject({
      record: { state: 'applied' },
    });
    expect(planStep({ kind: 'hint' }, group({ claimed: ['paid', 'fulfilling'] }), looked({ status: 'paid' }))).toEqual({
      kind: 'do',
      work: { kind: 'poll_sooner' },
    });
    // a local status (not the upstream's) is never late
    expect(planStep({ kind: 'hint' }, group(), looked({ status: 'submit_unknown' }))).toEqual({
      kind: 'do',
      work: { kind: 'poll_sooner' },
    });
  });

  it('apply, resolve, check_untracked and read are work: the locked apply, the resolving read, the check, the confirming read', () => {
    expect(planStep({ kind: 'apply', reports: [{ status: 'paid' }] }, group(), looked())).toEqual({ kind: 'do', work: { kind: 'apply' } });
    expect(planStep({ kind: 'resolve' }, group(), looked())).toEqual({ kind: 'do', work: { kind: 'resolve' } });
    expect(planStep({ kind: 'check_untracked' }, group(), looked())).toEqual({ kind: 'do', work: { kind: 'check_untracked' } });
    expect(planStep({ kind: 'read', deliver: true }, group(), looked())).toEqual({ kind: 'do', work: { kind: 'confirm' } });
  });
});

describe('nextStep: what the drain does with what came of its work', () => {
  const finish = (state: string, outcome: string, warn?: string) => ({
    kind: 'record',
    record: { kind: 'finish', state, outcome, ...(warn ? { warn } : {}) },
  });

  it('apply: done when applied; an order that moved is looked at again, then its plan on the locked row is carried out', () => {
    expect(nextStep({ work: 'apply', result: { kind: 'applied' } }, group(), looked(), FIRST)).toEqual({ kind: 'done' });
    const moved = (plan: Extract<WorkDone, { work: 'apply' }>['result']): WorkDone => ({ work: 'apply', result: plan });
    expect(nextStep(moved({ kind: 'planned', plan: { kind: 'read', deliver: false } }), group(), looked(), FIRST)).toEqual({
      kind: 'again',
    });
    expect(nextStep(moved({ kind: 'planned', plan: { kind: 'read', deliver: false } }), group(), looked(), LAST)).toEqual({
      kind: 'do',
      work: { kind: 'confirm' },
    });
    expect(nextStep(moved({ kind: 'planned', plan: { kind: 'wait', reason: 'attempt_in_flight' } }), group(), looked(), LAST)).toEqual({
      kind: 'record',
      record: { kind: 'wait', until: 'retry', outcome: 'attempt_in_flight' },
    });
    // a store of any reason: the upstream order was the order's when the look read it
    for (const plan of [{ kind: 'store', reason: 'unknown_order' } as const, { kind: 'check_untracked' } as const])
      expect(nextStep(moved({ kind: 'planned', plan }), group(), looked(), LAST)).toEqual(
        finish('ignored', "another attempt's callback (SHOP-1): order SHOP-1 is at attempt 1; not applied"),
      );
    expect(nextStep(moved({ kind: 'planned', plan: { kind: 'apply', reports: [] } }), group(), looked(), LAST)).toEqual({
      kind: 'record',
      record: { kind: 'wait', until: 'retry', outcome: 'order_moved' },
    });
  });

  it('resolve: resolved is applied; an attempt settled meanwhile is looked at again with the answer, then read', () => {
    const resolve = (result: Extract<WorkDone, { work: 'resolve' }>['result']): WorkDone => ({ work: 'resolve', attempt: ATTEMPT, result });
    expect(nextStep(resolve({ kind: 'resolved' }), group(), looked(), FIRST)).toEqual(finish('applied', 'resolved attempt SHOP-1'));
    const answer = { id: 7, order_no: 'UP-7', status: 'paid', amount: '1.00' } as never;
    expect(nextStep(resolve({ kind: 'not_unknown', answer }), group(), looked(), FIRST)).toEqual({ kind: 'again', answer });
    expect(nextStep(resolve({ kind: 'not_unknown', answer }), group(), looked(), LAST)).toEqual({ kind: 'do', work: { kind: 'confirm' } });
    expect(nextStep(resolve({ kind: 'mismatch', reason: 'not ours' }), group(), looked(), FIRST)).toEqual(finish('ignored', 'not ours'));
  });

  it('a failed read no poll would make is tried again with its count, MAX_RESOLVE_TRIES at most; at shutdown it is given back', () => {
    const failed = { kind: 'read_failed' as const, error: { message: 'timeout' } };
    for (const done of [
      { work: 'resolve', attempt: ATTEMPT, result: failed },
      { work: 'check_untracked', attempt: ATTEMPT, result: failed },
    ] as WorkDone[]) {
      expect(nextStep(done, group({ tries: 2 }), looked(), FIRST)).toEqual({
        kind: 'record',
        record: { kind: 'retry_read', tries: 3, outcome: 'read_failed: timeout' },
      });
      expect(nextStep(done, group({ tries: MAX_RESOLVE_TRIES - 1 }), looked(), FIRST)).toEqual(finish('read_failed', 'timeout'));
      expect(nextStep(done, group(), looked(), { lastPass: false, aborted: true })).toEqual({
        kind: 'record',
        record: { kind: 'give_back' },
      });
    }
  });

  it('check_untracked: an anomaly kept, nothing kept, not confirmed, or followed meanwhile (looked at again once)', () => {
    const check = (result: Extract<WorkDone, { work: 'check_untracked' }>['result']): WorkDone => ({
      work: 'check_untracked',
      attempt: ATTEMPT,
      result,
    });
    expect(
      nextStep(
        check({ kind: 'anomaly', reason: 'UPSTREAM_ORDER_EXISTS', status: 'paid', order: { upstreamOrderId: null } }),
        group(),
        looked(),
        FIRST,
      ),
    ).toEqual(
      finish(
        'unknown_order',
        'anomaly UPSTREAM_ORDER_EXISTS: upstream order 7 (paid) exists for attempt SHOP-1 (rejected here); ' +
          'order SHOP-1 follows no upstream order',
      ),
    );
    expect(nextStep(check({ kind: 'nothing_kept', status: 'canceled' }), group(), looked(), FIRST)).toEqual(
      finish(
        'ignored',
        'upstream order 7 for attempt SHOP-1 is canceled there: nothing kept',
        'callback names upstream order 7 for SHOP-1 (attempt SHOP-1, rejected here), which the order does not follow; ' +
          'it is canceled there: ignored',
      ),
    );
    expect(nextStep(check({ kind: 'mismatch', reason: 'not ours' }), group(), looked(), FIRST)).toEqual(
      finish('ignored', 'not ours', 'callback for SHOP-1 not confirmed by the upstream: not ours; ignored'),
    );
    expect(nextStep(check({ kind: 'followed' }), group(), looked(), FIRST)).toEqual({ kind: 'again' });
    expect(nextStep(check({ kind: 'followed' }), group(), looked(), LAST)).toEqual(
      finish('ignored', 'order SHOP-1 follows upstream order 7 now'),
    );
  });

  it('poll_sooner: the next poll is recorded; an order nothing polls is read', () => {
    expect(nextStep({ work: 'poll_sooner', next: new Date('2026-12-01T10:00:00Z') }, group(), looked(), FIRST)).toEqual(
      finish('applied', 'poll_sooner: order SHOP-1 is polled by 2026-12-01T10:00:00.000Z (claimed paid); not read'),
    );
    expect(nextStep({ work: 'poll_sooner', next: null }, group(), looked(), FIRST)).toEqual({ kind: 'do', work: { kind: 'confirm' } });
  });

  it('confirm: applied (shared or its own read), deferred by a cancel, a failed read left to the poller, no upstream order', () => {
    const confirm = (result: Extract<WorkDone, { work: 'confirm' }>['result'], shared = false): WorkDone => ({
      work: 'confirm',
      result,
      shared,
    });
    expect(nextStep(confirm({ kind: 'applied', order: { status: 'delivered' } }, true), group(), looked(), FIRST)).toEqual(
      finish('applied', 'applied delivered (shared read)'),
    );
    expect(nextStep(confirm({ kind: 'applied', order: { status: 'paid' } }), group(), looked(), FIRST)).toEqual(
      finish('applied', 'applied paid'),
    );
    expect(nextStep(confirm({ kind: 'deferred' }), group(), looked(), FIRST)).toEqual({
      kind: 'record',
      record: { kind: 'wait', until: 'retry', outcome: 'operation_in_progress' },
    });
    const failed = confirm({ kind: 'read_failed', error: { message: 'timeout' } });
    expect(nextStep(failed, group({ tries: MAX_RESOLVE_TRIES }), looked(), FIRST)).toEqual({
      kind: 'record',
      record: { kind: 'read_due', outcome: 'timeout' },
    });
    expect(nextStep(failed, group(), looked(), { lastPass: true, aborted: true })).toEqual({
      kind: 'record',
      record: { kind: 'give_back' },
    });
    expect(nextStep(confirm({ kind: 'missing' }), group(), looked({ status: 'queued' }), FIRST)).toEqual(
      finish('ignored', 'order SHOP-1 has no upstream order to read (queued)'),
    );
  });

  it('on the last look nothing is looked at again', () => {
    const dones: WorkDone[] = [
      { work: 'apply', result: { kind: 'planned', plan: { kind: 'resolve' } } },
      { work: 'resolve', attempt: ATTEMPT, result: { kind: 'not_unknown' } },
      { work: 'check_untracked', attempt: ATTEMPT, result: { kind: 'followed' } },
    ];
    for (const done of dones) {
      expect(nextStep(done, group(), looked(), FIRST).kind).toBe('again');
      expect(nextStep(done, group(), looked(), LAST).kind).not.toBe('again');
    }
  });
});
