/**
 * For the upstream adapter's specs: awaits a promise that must reject with an error of the class, and
 * returns that error.
 */
import type { UpstreamError } from '../../src/upstream/upstream.errors.js';

type ErrorClass<T extends UpstreamError> = abstract new (...args: never[]) => T;

export async function failure<T extends UpstreamError>(p: Promise<unknown>, cls: ErrorClass<T>): Promise<T> {
  const err = await p.then(
    (v) => {
      throw new Error(`expected a ${cls.name}, got ${JSON.stringify(v)}`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(cls);
  return err as T;
}
