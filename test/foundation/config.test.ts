import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, parseDuration } from '../../src/config.js';

describe('configuration', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    assert.equal(config.port, 3000);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.publicUrl, 'http://127.0.0.1:3000');
    assert.equal(config.publicUrlIsExplicit, false);
    assert.equal(config.databaseUrl, null);
    assert.equal(config.rateLimitPerMinute, 100);
    assert.deepEqual(config.webhookRetryDelaysMs, [1000, 5000, 30_000, 300_000, 1_800_000, 7_200_000]);
    assert.equal(config.webhookMaxAttempts, 6);
    assert.equal(config.webhookTimeoutMs, 10_000);
    assert.equal(config.webhookAllowPrivateNetworks, false);
    assert.equal(config.trustProxy, null);
  });

  it('takes the public URL from PUBLIC_URL, else from HOST and PORT as a browser opens them', () => {
    const given = loadConfig({ PUBLIC_URL: 'https://track.example.com/', PORT: '8080' });
    assert.equal(given.publicUrl, 'https://track.example.com');
    assert.equal(given.publicUrlIsExplicit, true);
    assert.equal(loadConfig({ PORT: '8080' }).publicUrl, 'http://127.0.0.1:8080');
    assert.equal(loadConfig({ HOST: '0.0.0.0', PORT: '8080' }).publicUrl, 'http://127.0.0.1:8080');
    assert.equal(loadConfig({ HOST: '::', PORT: '8080' }).publicUrl, 'http://[::1]:8080');
    assert.equal(loadConfig({ HOST: '::1', PORT: '8080' }).publicUrl, 'http://[::1]:8080');
    assert.equal(loadConfig({ HOST: 'box.lan', PORT: '8080' }).publicUrl, 'http://box.lan:8080');
  });

  it('parses durations and delay lists', () => {
    assert.equal(parseDuration('250ms'), 250);
    assert.equal(parseDuration('5m'), 300_000);
    assert.deepEqual(loadConfig({ WEBHOOK_RETRY_DELAYS: '10ms,20ms' }).webhookRetryDelaysMs, [10, 20]);
    assert.deepEqual(loadConfig({ WEBHOOK_RETRY_DELAYS: '1s,24d' }).webhookRetryDelaysMs, [1000, 24 * 86_400_000]);
    assert.equal(loadConfig({ RETENTION_EVENTS: '3650d' }).retentionEventsMs, 3650 * 86_400_000);
    assert.equal(loadConfig({ WEBHOOK_DISABLE_AFTER: '3650d,1' }).webhookDisableAfter?.ms, 3650 * 86_400_000);
  });

  it('reads TRUST_PROXY as no proxy, a hop count (true is one hop), or a list of proxy addresses', () => {
    for (const value of ['', 'false', 'off', '0']) assert.equal(loadConfig({ TRUST_PROXY: value }).trustProxy, null);
    for (const value of ['true', 'TRUE', 'yes', '1'])
      assert.deepEqual(loadConfig({ TRUST_PROXY: value }).trustProxy, { hops: 1 });
    assert.deepEqual(loadConfig({ TRUST_PROXY: '2' }).trustProxy, { hops: 2 });
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,2001:db8::/32,loopback' }).trustProxy, {
      proxies: ['10.0.0.0/8', '127.0.0.1', '2001:db8::/32', 'loopback'],
    });
  });

  for (const [variable, value] of [
    ['PORT', 'eighty'],
    ['DATABASE_URL', 'mysql://x'],
    ['RATE_LIMIT_PER_MINUTE', '0'],
    ['WEBHOOK_TIMEOUT', 'soon'],
    ['WEBHOOK_TIMEOUT', '10'],
    ['WEBHOOK_TIMEOUT', '25d'],
    ['REQUEST_TIMEOUT', '30d'],
    ['WEBHOOK_RETRY_DELAYS', '1s,,x'],
    // Past the Date range a scheduled retry could not be shown: the delivery log answered 500.
    ['WEBHOOK_RETRY_DELAYS', '100000000d'],
    ['WEBHOOK_RETRY_DELAYS', '1s,25d'],
    ['WEBHOOK_DISABLE_AFTER', '100000000d,20'],
    ['RETENTION_DELIVERIES', '3651d'],
    ['RETENTION_CLICKS', '100000000d'],
    ['TRUST_PROXY', 'maybe'],
    ['TRUST_PROXY', '11'],
    ['TRUST_PROXY', '-1'],
    ['TRUST_PROXY', '10.0.0.0/33'],
    ['TRUST_PROXY', '10.0.0.0/8,'],
    ['TRUST_PROXY', '10.0.0.0/8/8'],
    ['TRUST_PROXY', '0x7f.1'],
    ['TRUST_PROXY', 'proxy.internal'],
    ['LOG_LEVEL', 'loud'],
    ['REDIS_URL', 'not a url'],
    // A base URL that links are appended to cannot end in a query string or fragment.
    ['PUBLIC_URL', 'http://shop.example/aff?x=1'],
    ['PUBLIC_URL', 'https://shop.example/#top'],
    ['PUBLIC_URL', 'https://shop.example/?'],
  ] as const) {
    it(`rejects ${variable}=${value} naming the variable`, () => {
      assert.throws(
        () => loadConfig({ [variable]: value }),
        (error: unknown) =>
          error instanceof ConfigError && error.variable === variable && error.message.includes(variable),
      );
    });
  }
});
