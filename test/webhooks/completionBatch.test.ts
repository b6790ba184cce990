/**
 * Completions that finish together are recorded together (completion.ts: one transaction per
 * batch, on PostgreSQL one statement). Each keeps its own fence: a delivery whose lease
 * another worker took meanwhile is not overwritten, and gets no attempt row, while the
 * rest of its batch is recorded with each one's own verdict.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { claimDueDeliveries } from '../../src/modules/deliveries/claims.js';
import { CompletionBatcher } from '../../src/modules/deliveries/completion.js';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { deliveriesOf, firePartnerApproved, Receiver, subscribe } from './harness.js';

for (const dialect of testedDialects()) {
  describe(`recording a batch of completions (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect, { env: { RATE_LIMIT_PER_MINUTE: '100000' } });
    });
    after(() => env.close());

    it('records each delivery of a batch with its own verdict and skips one whose lease was taken over', async () => {
      const receiver = await Receiver.answering(200);
      try {
        const sub = await subscribe(env, { url: receiver.url });
        for (let i = 0; i < 3; i++) await firePartnerApproved(env);
        const claimed = await claimDueDeliveries(env.ctx, { owner: 'worker-a', limit: 10, leaseMs: 60_000 });
        assert.equal(claimed.length, 3);
        const [succeeded, failing, takenOver] = claimed as [
          (typeof claimed)[0],
          (typeof claimed)[0],
          (typeof claimed)[0],
        ];
        await env.ctx.db.transact((trx) =>
          trx
            .updateTable('webhook_deliveries')
            .set({ lease_owner: 'worker-b' })
            .where('id', '=', takenOver.id)
            .execute(),
        );

        const attemptedAt = env.clock.now();
        const answer = (statusCode: number) => ({
          statusCode,
          latencyMs: 3,
          responseBody: `answer ${statusCode}`,
          error: null,
        });
        const completions = new CompletionBatcher(env.ctx);
        // Completed in one turn of the event loop: one batch.
        const results = await Promise.all([
          completions.complete(succeeded, 'worker-a', attemptedAt, answer(200)),
          completions.complete(failing, 'worker-a', attemptedAt, answer(500)),
          completions.complete(takenOver, 'worker-a', attemptedAt, answer(200)),
        ]);
        assert.deepEqual(
          results.map((r) => [r.recorded, r.verdict.status]),
          [
            [true, 'succeeded'],
            [true, 'retry_scheduled'],
            [false, 'succeeded'],
          ],
        );

        const rows = new Map((await deliveriesOf(env, sub.id)).map((row) => [row.id, row]));
        assert.equal(rows.get(succeeded.id)?.status, 'succeeded');
        assert.equal(rows.get(succeeded.id)?.lease_owner, null);
        assert.equal(rows.get(failing.id)?.status, 'retry_scheduled');
        assert.equal(rows.get(failing.id)?.attempt_count, 1);
        assert.equal(
          rows.get(failing.id)?.next_attempt_at,
          attemptedAt + 1000,
          'the first retry waits 1 s (DESIGN §5)',
        );
        assert.equal(rows.get(takenOver.id)?.status, 'attempting', "the other worker's delivery is left as it was");
        assert.equal(rows.get(takenOver.id)?.lease_owner, 'worker-b');

        const attempts = await env.ctx.db.read
          .selectFrom('webhook_attempts')
          .select(['delivery_id', 'status_code', 'response_body'])
          .where(
            'delivery_id',
            'in',
            claimed.map((d) => d.id),
          )
          .orderBy('status_code')
          .execute();
        assert.deepEqual(attempts, [
          { delivery_id: succeeded.id, status_code: 200, response_body: 'answer 200' },
          { delivery_id: failing.id, status_code: 500, response_body: 'answer 500' },
        ]);
      } finally {
        await receiver.close();
      }
    });
  });
}
