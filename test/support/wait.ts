/** Waiting in tests: poll until a condition holds, with a deadline and the last value in the error. */
import type { LoopProgressView } from '../../src/common/loop-progress.js';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `read` until `done` holds for its value; throws with `what` and the last value after `timeoutMs`. */
export async function waitFor<T>(read: () => Promise<T> | T, done: (v: T) => boolean, what = 'condition', timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await read();
  while (!done(last)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(last)?.slice(0, 2000)}`);
    await sleep(25);
    last = await read();
  }
  return last;
}

/**
 * Resolves once `n` whole passes of a background loop begun after the call have ended (OrderPoller's
 * `passes` and `sweeps`, CallbackProcessor's `drains`, ReconciliationScheduler's `passes`): the loop
 * ran, so what it would have done, it did. For a test that then checks that nothing happened; it fails
 * when the loop never runs, where a sleep would pass.
 */
export async function passesRun(progress: LoopProgressView, n = 2, what = 'passes of the loop'): Promise<void> {
  const from = progress.begun;
  await waitFor(
    () => progress.ended,
    (ended) => ended >= from + n,
    `${n} ${what} begun after ${from}`,
  );
}

/**
 * `work`'s value, or an error naming `what` once `ms` have passed: for work that must end on its own
 * while something it must not wait for never ends (a lock held until the test releases it, an upstream
 * that never answers). `ms` lies far beyond the work's own time and short of what waiting would take,
 * so only work that waits reaches it; it measures no duration.
 */
export async function settlesWithin<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still waiting after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
