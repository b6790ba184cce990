/**
 * Shared set-up of the webhook-operations tests (issue #20): a test env served on a real
 * loopback port (the API is called with fetch), a dispatcher driven by `runOnce`, and real
 * receivers closed after each test.
 */
import assert from 'node:assert/strict';
import type { Dialect } from '../../src/db/database.js';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { listen, type WireClient } from '../contract/http.js';
import { createTestEnv, type JsonBody, type TestEnv, type TestEnvOptions } from '../helpers.js';
import { Receiver } from './harness.js';

export interface OpsEnv {
  env: TestEnv;
  http: WireClient;
  dispatcher: Dispatcher;
  receivers: Receiver[];
  /** A real receiver, closed by `reset`. */
  receiver(answer?: Receiver['answer']): Promise<Receiver>;
  /** Calls the API over HTTP and asserts the status. */
  call(method: string, path: string, status: number, body?: unknown, key?: string): Promise<JsonBody>;
  /** Runs the dispatcher until nothing more is due now. */
  drain(): Promise<number>;
  reset(): Promise<void>;
  close(): Promise<void>;
}

export async function createOpsEnv(dialect: Dialect, options: TestEnvOptions = {}): Promise<OpsEnv> {
  const env = await createTestEnv(dialect, options);
  const http = await listen(env);
  const dispatcher = new Dispatcher(env.ctx);
  const receivers: Receiver[] = [];
  return {
    env,
    http,
    dispatcher,
    receivers,
    async receiver(answer) {
      const r = await Receiver.start(answer);
      receivers.push(r);
      return r;
    },
    async call(method, path, status, body, key) {
      const res = await http.call(method, path, { body, key });
      assert.equal(res.status, status, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    },
    async drain() {
      let total = 0;
      for (;;) {
        const made = await dispatcher.runOnce();
        total += made;
        if (made === 0) return total;
      }
    },
    async reset() {
      await Promise.all(receivers.splice(0).map((r) => r.close()));
      await env.ctx.db.transact(async (trx) => {
        await trx.deleteFrom('webhook_attempts').execute();
        await trx.deleteFrom('webhook_deliveries').execute();
        await trx.deleteFrom('webhook_subscription_hours').execute();
        await trx.deleteFrom('delivery_throttles').execute();
        await trx.deleteFrom('webhook_subscriptions').execute();
      });
    },
    async close() {
      await dispatcher.close();
      await Promise.all(receivers.splice(0).map((r) => r.close()));
      await env.close();
    },
  };
}

/** Events (parsed bodies) a receiver got, of one type. */
export function received(r: Receiver, event: string): Array<{ id: string; event: string; data: JsonBody }> {
  return r.requests.map((q) => JSON.parse(q.body.toString('utf8'))).filter((b) => b.event === event);
}
