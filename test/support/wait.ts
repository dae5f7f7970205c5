/** Waiting in tests: poll until a condition holds, with a deadline and the last value in the error. */

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
