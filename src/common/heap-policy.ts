/**
 * How far the JavaScript heap may grow between full collections, in a process that also holds the
 * embedded database (whose fixed 128 MB of WebAssembly memory sits in the same process).
 *
 * V8 lets the heap grow up to 4× its live size between full collections when garbage comes fast, as
 * when a sync parses its pages or orders stream through, and such garbage, not live data, is most of
 * a PGlite service's peak. Once `enable()`d (the embedded database starts), the heap may grow by its
 * live size (`--heap-growing-percent=100`), and by half of it while at least one holder holds the
 * policy (a sync: `hold()`). Why both limits: the tighter one during syncs alone leaves the heap
 * inflated by what ran before them; the tighter one for good makes orders dearer (more frequent
 * collections); the looser one at rest costs orders nothing and the tighter one during a sync keeps
 * its peak down without slowing it (bench:sync and bench:orders on PGlite show the effect).
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
