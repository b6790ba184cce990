/**
 * The chaos tests' pieces, one file per concern:
 * - `database.ts`: a fresh database per run (a SQLite directory, or a whole PostgreSQL
 *   database, because the server always uses `public`) and direct reads of it;
 * - `service.ts`: the real service as a child process (`src/cli.ts serve`) that can be
 *   killed with SIGKILL and restarted, and the CLI;
 * - `client.ts`: JSON requests against it;
 * - `receiver.ts`: webhook receivers that record every receipt by its wh_ id;
 * - `load.ts`: a steady load generator that remembers every acknowledged write;
 * - `audit.ts`: the checks afterwards (deliveries against receipts, the outbox, lost writes).
 * Waiting and free ports are shared with the other tests (`test/wait.ts`, `test/net.ts`).
 */
export { PG_URL, REDIS_URL } from '../helpers.js';
export { freePort } from '../net.js';
export { sleep, waitFor } from '../wait.js';
export * from './audit.js';
export * from './client.js';
export * from './database.js';
export * from './load.js';
export * from './receiver.js';
export * from './service.js';

export const randomBetween = (min: number, max: number) => min + Math.random() * (max - min);
