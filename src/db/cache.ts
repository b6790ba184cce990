/**
 * Lookups of rarely-changing rows (an API key by its hash, an offer, a partner, a brand, a
 * blocklist) kept in memory for the hot paths, and never served stale past these bounds:
 *
 * - a change committed by this process: at once (the database's change epoch moves on at
 *   the commit, see changes.ts, and every entry read under an older epoch is dropped);
 * - a change committed by another process on SQLite (the CLI, a second server): at the next
 *   lookup, since the writer connection's `PRAGMA data_version` moves on with it;
 * - a change by another process on PostgreSQL, or made outside Affitrack: within MAX_AGE_MS,
 *   after which an entry is read again whatever the epoch says.
 *
 * Ages are taken on the application clock, so tests move time instead of sleeping.
 */
import type { Clock } from '../clock.js';
import type { Database } from './database.js';

/** Oldest an entry may be served; well within the one second a change must take to apply. */
export const MAX_AGE_MS = 500;
/** Entries per cache and database at most; past it the cache starts over. */
const MAX_ENTRIES = 10_000;

interface Entry<V> {
  value: V;
  epoch: number;
  at: number;
}

export interface LookupContext {
  db: Database;
  clock: Clock;
}

export class CachedLookup<K, V> {
  /** Per database, so tests with several databases in one process never share entries. */
  private readonly byDatabase = new WeakMap<Database, Map<K, Entry<V>>>();
  /**
   * Loads under way, per database and key: requests that miss together share one read (an
   * entry expiring under load would otherwise be read by every request in flight).
   */
  private readonly loading = new WeakMap<Database, Map<K, { epoch: number; value: Promise<V> }>>();

  constructor(private readonly load: (db: Database, key: K) => Promise<V>) {}

  async get(ctx: LookupContext, key: K): Promise<V> {
    const epoch = ctx.db.cacheEpoch();
    const now = ctx.clock.now();
    let entries = this.byDatabase.get(ctx.db);
    if (!entries) {
      entries = new Map();
      this.byDatabase.set(ctx.db, entries);
    }
    const hit = entries.get(key);
    if (hit && hit.epoch === epoch && now >= hit.at && now - hit.at < MAX_AGE_MS) return hit.value;
    let loads = this.loading.get(ctx.db);
    if (!loads) {
      loads = new Map();
      this.loading.set(ctx.db, loads);
    }
    // A load started under this epoch may be shared; one from before a change may not.
    const started = loads.get(key);
    if (started && started.epoch === epoch) return started.value;
    const load = this.load(ctx.db, key);
    const own = { epoch, value: load };
    loads.set(key, own);
    try {
      const value = await load;
      if (entries.size >= MAX_ENTRIES) entries.clear();
      // Filed under the epoch read before loading: a change committed meanwhile outdates it.
      entries.set(key, { value, epoch, at: now });
      return value;
    } finally {
      if (loads.get(key) === own) loads.delete(key);
    }
  }
}

export function cachedLookup<K, V>(load: (db: Database, key: K) => Promise<V>): CachedLookup<K, V> {
  return new CachedLookup(load);
}
