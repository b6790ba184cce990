/**
 * When a throttled target's next send may start in this process, beyond its send slot
 * (throttle.ts): a process keeps its own sends to the target one interval apart, and where
 * several processes send (PostgreSQL) each send also takes its start from the target's shared
 * row. The lanes (lanes.ts) ask it before starting a throttled delivery and hold the delivery
 * for as long as it says.
 */
import type { AppContext } from '../../context.js';
import { takeSendStart } from './throttle.js';

/** Throttled targets whose last start is remembered before old ones are dropped. */
const MAX_THROTTLED_STARTS = 1000;

export class SendStarts {
  /** Throttled targets: when their last delivery started in this process (see note). */
  private readonly throttledStarts = new Map<string, number>();

  constructor(private readonly ctx: AppContext) {}

  /** Several worker processes may send (PostgreSQL); SQLite runs one, whose own spacing is exact. */
  get shared(): boolean {
    return this.ctx.db.dialect === 'postgres';
  }

  /** How long a send to `key` must still wait at `now` to start `gap` after the last one started here. */
  waitHere(key: string, gap: number, now: number): number {
    const last = this.throttledStarts.get(key);
    return last === undefined ? 0 : last + gap - now;
  }

  /**
   * When a throttled target's last delivery started here, kept past its lane (a later claim's
   * slots may be due at once after sends that went late). Entries older than any gap (1 s at
   * the slowest rate) no longer matter and are dropped as the map grows.
   */
  note(key: string, now: number): void {
    this.throttledStarts.set(key, now);
    if (this.throttledStarts.size <= MAX_THROTTLED_STARTS) return;
    for (const [other, at] of this.throttledStarts) if (at < now - 1000) this.throttledStarts.delete(other);
  }

  /**
   * Whether the target's interval has passed since its last send started in any process
   * (throttle.ts, takeSendStart): `wait` is 0 when the send may start at `now`, else how long
   * it must wait. Slots alone do not keep the rate: a worker whose event loop or send slots
   * are busy starts some sends after their slots, together with another worker's on-time ones.
   */
  async takeShared(key: string, gap: number): Promise<{ now: number; wait: number }> {
    let now = this.ctx.clock.now();
    let wait: number;
    try {
      wait = await this.ctx.db.transact((trx) => {
        // Read when the write runs, not when it waited for a connection.
        now = this.ctx.clock.now();
        return takeSendStart(trx, key, gap, now);
      });
    } catch (error) {
      // Without the shared start the rate cannot be kept: try again one interval later.
      this.ctx.logger.error({ err: error }, 'could not take the start of a throttled send');
      wait = gap;
    }
    return { now, wait };
  }
}
