/**
 * How far the JavaScript heap may grow between full collections, in a process that also holds the
 * embedded database (whose fixed 128 MB of WebAssembly memory sits in the same process).
 *
 * V8 lets the heap grow up to 4× its live size between full collections when garbage comes fast, as
 * when a sync parses 20 MB of pages or orders stream through: most of a PGlite service's peak was
 * such garbage. Once `enable()`d (the embedded database starts), the heap may grow by its live size
 * (`--heap-growing-percent=100`), and by half of it while at least one holder holds the policy (a
 * sync: `hold()`). Measured with bench:sync and bench:orders on PGlite (and `--no-liftoff`, see
 * embedded-postgres.ts), peak RSS during the syncs:
 *   - V8's own heuristic: 352–373 MB;
 *   - 50 % during syncs only: 340–343 MB (the heap arrived inflated from what ran before);
 *   - 100 %, and 50 % during syncs (this): 308–319 MB, first sync 2.61–2.71 s (2.56–2.85 before),
 *     re-sync 0.71–0.82 of its floor; orders no dearer, if anything cheaper: service CPU 2.57 and
 *     2.67 ms an order against 2.93 and 3.13 with V8's heuristic at rest, p99 89–99 ms against
 *     104–158 ms (bench:orders on PGlite, one after the other; in an earlier pair 2.80–2.83 against
 *     2.67–2.90);
 *   - 50 % for good: 288–296 MB, but orders ~15 % dearer (3.17–3.27 ms an order against 2.63–2.77).
 * V8 reads the flag whenever a full collection sets the next limit, so a change takes effect from the
 * next one. Not enabled (a PostgreSQL server), it does nothing.
 */
import { setFlagsFromString } from 'node:v8';

const RESTING = '--heap-growing-percent=100';
const HELD = '--heap-growing-percent=50';

export class HeapPolicy {
  private enabled = false;
  private holders = 0;

  constructor(private readonly setFlags: (flags: string) => void = setFlagsFromString) {}

  /** The process holds the embedded database: the resting limit from now on. */
  enable(): void {
    if (this.enabled) return;
    this.enabled = true;
    this.setFlags(this.holders > 0 ? HELD : RESTING);
  }

  /** The tighter limit until the returned function is called (once; later calls do nothing). */
  hold(): () => void {
    if (this.holders++ === 0 && this.enabled) this.setFlags(HELD);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.holders === 0 && this.enabled) this.setFlags(RESTING);
    };
  }
}

/** The process's policy (V8's flags are the process's). */
export const heapPolicy = new HeapPolicy();
