/**
 * A periodic job while its database work fails (a database outage): one error with its stack
 * when it starts failing, silence while it keeps failing, one line when it works again, and
 * tries that back off instead of logging an error with a stack every second.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { ManualClock } from '../../src/clock.js';
import { Dispatcher } from '../../src/modules/deliveries/dispatcher.js';
import { FailureLog, MAX_FAILURE_BACKOFF_MS } from '../../src/worker/failureLog.js';
import { periodicJob } from '../../src/worker/jobs.js';
import { createTestEnv, type TestEnv, testedDialects } from '../helpers.js';
import { waitFor } from '../wait.js';

for (const dialect of testedDialects()) {
  describe(`a periodic job whose step fails (${dialect})`, () => {
    let env: TestEnv;
    before(async () => {
      env = await createTestEnv(dialect);
    });
    after(() => env.close());

    it('logs the first failure with its stack, nothing while it keeps failing, and one line when it works again', async () => {
      let calls = 0;
      const FAILING_CALLS = 4;
      const job = periodicJob('outage-probe', env.ctx, 1, async () => {
        calls += 1;
        // A real error from the database, as an outage gives one on every try.
        if (calls <= FAILING_CALLS) await sql`select * from no_such_table`.execute(env.ctx.db.read);
      });
      const controller = new AbortController();
      const running = job.run(controller.signal);
      await waitFor('the job to work again', async () => calls > FAILING_CALLS + 1, 20_000, 5);
      controller.abort();
      await running;

      const lines = env.logs.map((line) => JSON.parse(line)).filter((entry) => entry.job === 'outage-probe');
      const errors = lines.filter((entry) => entry.level === 50);
      assert.equal(errors.length, 1, 'one error for the whole run of failures');
      assert.match(errors[0].err.stack, /no_such_table/);
      const recovered = lines.filter((entry) => entry.msg === 'job works again');
      assert.equal(recovered.length, 1);
      assert.equal(recovered[0].failures, FAILING_CALLS);
    });

    it("logs the delivery dispatcher's failing claims once, and one line when it claims again", async () => {
      const dispatcher = new Dispatcher(env.ctx, { pollMs: 5 });
      const rename = (from: string, to: string) =>
        env.ctx.db.transact((trx) => sql`alter table ${sql.id(from)} rename to ${sql.id(to)}`.execute(trx));
      const controller = new AbortController();
      const running = dispatcher.run(controller.signal);
      const dispatcherLines = () =>
        env.logs.map((line) => JSON.parse(line)).filter((entry) => entry.job === dispatcher.name);
      try {
        // The claims' table is gone for a while: every claim fails, as in an outage.
        await rename('webhook_deliveries', 'webhook_deliveries_away');
        await waitFor('a failed claim', async () => dispatcherLines().length > 0, 20_000, 5);
        // Long enough for several tries at the back-off's first steps (10, 20, 40 ms …).
        await new Promise((resolve) => setTimeout(resolve, 300));
        await rename('webhook_deliveries_away', 'webhook_deliveries');
        await waitFor(
          'claims to work again',
          async () => dispatcherLines().some((entry) => entry.msg === 'job works again'),
          20_000,
          5,
        );
      } finally {
        controller.abort();
        await running;
      }
      const lines = dispatcherLines();
      const errors = lines.filter((entry) => entry.level === 50);
      assert.equal(errors.length, 1, 'one error for the whole run of failures');
      assert.match(errors[0].err.message, /webhook_deliveries/);
      const recovered = lines.filter((entry) => entry.msg === 'job works again');
      assert.equal(recovered.length, 1);
      assert.ok(recovered[0].failures >= 2, `failed ${recovered[0].failures} times`);
    });
  });
}

describe('the back-off of a failing job', () => {
  it('doubles the wait after each failure up to a cap, and returns to the interval once it works', () => {
    const quiet = { logger: { error() {}, info() {} }, clock: new ManualClock() } as never;
    const log = new FailureLog(quiet, 'x', 1000);
    assert.equal(log.delay(), 1000);
    const waits: number[] = [];
    for (let i = 0; i < 8; i++) {
      log.failed(new Error('down'));
      waits.push(log.delay());
    }
    assert.deepEqual(waits, [2000, 4000, 8000, 16000, MAX_FAILURE_BACKOFF_MS, 30000, 30000, 30000]);
    log.succeeded();
    assert.equal(log.delay(), 1000);
    const slow = new FailureLog(quiet, 'y', 60_000);
    slow.failed(new Error('down'));
    assert.equal(slow.delay(), 60_000, 'a job slower than the cap keeps its own interval');
  });
});
