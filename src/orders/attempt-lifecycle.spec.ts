import { ATTEMPT_MOVES, attemptMove, type SendOutcomeKind } from './attempt-lifecycle.js';
import { canTransition } from './order-state.js';

const OUTCOMES: SendOutcomeKind[] = ['accepted', 'rejected', 'unavailable', 'unknown', 'queued'];

describe('the attempt lifecycle', () => {
  it('a first send: each outcome has its own attempt state and order move', () => {
    const first = { status: 'submitting' as const, sends: 1 };
    expect(OUTCOMES.map((o) => attemptMove(o, first))).toEqual([
      { attempt: 'accepted', order: 'report' },
      { attempt: 'rejected', order: 'rejected' },
      { attempt: 'rejected', order: 'rejected' },
      { attempt: 'submit_unknown', order: 'submit_unknown' },
      { attempt: 'queued', order: 'queued' },
    ]);
  });

  it('a re-send of an unknown attempt: only an acceptance settles it; anything else leaves it unknown, sent again later', () => {
    const resent = { status: 'submit_unknown' as const, sends: 2 };
    expect(attemptMove('accepted', resent)).toEqual({ attempt: 'accepted', order: 'report' });
    for (const o of ['rejected', 'unavailable', 'unknown', 'queued'] as const) expect(attemptMove(o, resent)).toEqual({ attempt: 'resend_later', order: 'unchanged' });
  });

  it('a refusal of the only send of an unknown attempt (its late answer) closes it', () => {
    expect(attemptMove('rejected', { status: 'submit_unknown', sends: 1 })).toEqual({ attempt: 'rejected', order: 'rejected' });
  });

  it('every order move it makes is one the state table allows', () => {
    for (const [from, moves] of [['submitting', ATTEMPT_MOVES] as const, ['submit_unknown', ATTEMPT_MOVES] as const]) {
      for (const o of OUTCOMES) {
        const move = attemptMove(o, { status: from, sends: 1 });
        if (move.order === 'rejected' || move.order === 'submit_unknown') expect(canTransition('submit_outcome', from, move.order)).toBe(true);
        if (move.order === 'queued') expect(canTransition('requeue', from, 'queued')).toBe(true);
        expect(moves[o]).toBeDefined();
      }
    }
  });
});
