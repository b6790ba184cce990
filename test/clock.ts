/** Test clocks besides `ManualClock` (src/clock.ts), which only moves when told to. */
import { ManualClock } from '../src/clock.js';

/**
 * A clock that follows real time, for tests of a real-time loop (the dispatcher's), and that
 * still moves when told to: `advance` and `set` shift it against the real clock, so a test
 * can jump to a retry's due time exactly as with a `ManualClock`.
 */
export class SystemTestClock extends ManualClock {
  private offset = 0;

  override now(): number {
    return Date.now() + this.offset;
  }

  override advance(ms: number): void {
    this.offset += ms;
  }

  override set(ms: number): void {
    this.offset = ms - Date.now();
  }
}
