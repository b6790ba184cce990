/**
 * Ids in bodies and id filters on lists: an empty id is never "none" or "every", and a filter
 * naming no offer or partner of the brand is 422 naming the parameter on every list and report
 * (README "Lists"), never an empty answer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestEnv, expectError, type TestEnv, testedDialects } from '../helpers.js';

for (const dialect of testedDialects()) {
  describe(`ids in bodies and id filters (${dialect})`, () => {
    let env: TestEnv;
    let offerId: string;
    let partnerId: string;
    let otherOfferId: string;
    let otherPartnerId: string;

    before(async () => {
      env = await createTestEnv(dialect);
      const offer = await env.request('POST', '/api/v1/offers', {
        body: { name: 'Ids', destinationUrl: 'https://shop.example/', payoutCents: 500, revenueCents: 1000 },
      });
      offerId = offer.body.id;
      partnerId = (await env.request('POST', '/api/v1/partners', { body: { name: 'Ids P', email: 'ids@example.com' } }))
        .body.id;
      const other = await env.createBrand('Ids Other');
      otherOfferId = (
        await env.request('POST', '/api/v1/offers', {
          key: other.apiKey,
          body: { name: 'Theirs', destinationUrl: 'https://shop.example/' },
        })
      ).body.id;
      otherPartnerId = (
        await env.request('POST', '/api/v1/partners', {
          key: other.apiKey,
          body: { name: 'Theirs', email: 'theirs@example.com' },
        })
      ).body.id;
    });
    after(() => env.close());

    const detailsOf = (res: Awaited<ReturnType<TestEnv['request']>>) =>
      expectError(res, 422, 'validation_error').details ?? [];

    describe('an empty id in a body', () => {
      it('refuses a partner postback for offerId "" instead of saving one that never fires', async () => {
        const res = await env.request('POST', `/api/v1/partners/${partnerId}/postbacks`, {
          body: { url: 'https://partner.example/pb?c={conversion_id}', events: ['conversion.created'], offerId: '' },
        });
        assert.deepEqual(detailsOf(res), [
          { path: 'offerId', message: 'must be a string of 1 to 64 characters or null' },
        ]);
        const list = await env.request('GET', `/api/v1/partners/${partnerId}/postbacks`);
        assert.deepEqual(list.body.data, []);
      });

      it('refuses a payout run for partnerId "" instead of paying every partner', async () => {
        const conversion = await env.request('POST', '/api/v1/conversions', { body: { offerId, partnerId } });
        assert.equal(conversion.status, 201);
        await env.request('POST', `/api/v1/conversions/${conversion.body.id}/approve`, { body: {} });
        env.clock.advance(1000);
        const upTo = new Date(env.clock.now()).toISOString();
        const res = await env.request('POST', '/api/v1/payouts', { body: { upTo, partnerId: '' } });
        assert.deepEqual(detailsOf(res), [{ path: 'partnerId', message: 'must be at least 1 character long' }]);
        assert.deepEqual((await env.request('GET', '/api/v1/payouts')).body.data, []);
        const preview = await env.request('GET', `/api/v1/payouts/preview?upTo=${encodeURIComponent(upTo)}&partnerId=`);
        assert.deepEqual(detailsOf(preview), [
          { path: 'query.partnerId', message: 'must be at least 1 character long' },
        ]);
      });

      it('refuses clickId "" on POST /clicks/erase and POST /conversions', async () => {
        const erase = await env.request('POST', '/api/v1/clicks/erase', { body: { clickId: '' } });
        assert.deepEqual(detailsOf(erase), [{ path: 'clickId', message: 'must be at least 1 character long' }]);
        const conversion = await env.request('POST', '/api/v1/conversions', {
          body: { clickId: '', offerId, partnerId },
        });
        assert.deepEqual(detailsOf(conversion), [{ path: 'clickId', message: 'must be at least 1 character long' }]);
        for (const field of ['offerId', 'partnerId']) {
          const res = await env.request('POST', '/api/v1/conversions', {
            body: { offerId, partnerId, [field]: '' },
          });
          assert.deepEqual(detailsOf(res), [{ path: field, message: 'must be at least 1 character long' }]);
        }
      });

      it('names the missing one of offerId and partnerId on POST /conversions', async () => {
        const noPartner = await env.request('POST', '/api/v1/conversions', { body: { offerId } });
        assert.deepEqual(detailsOf(noPartner), [
          { path: 'partnerId', message: 'is required with offerId when there is no clickId' },
        ]);
        const noOffer = await env.request('POST', '/api/v1/conversions', { body: { partnerId } });
        assert.deepEqual(detailsOf(noOffer), [
          { path: 'offerId', message: 'is required with partnerId when there is no clickId' },
        ]);
        const neither = await env.request('POST', '/api/v1/conversions', { body: {} });
        assert.deepEqual(detailsOf(neither), [{ path: 'clickId', message: 'give clickId, or offerId and partnerId' }]);
      });
    });

    describe('id filters on lists and reports', () => {
      const LISTS = [
        { path: '/api/v1/conversions', filters: ['offerId', 'partnerId'] },
        { path: '/api/v1/conversions?format=csv', filters: ['offerId', 'partnerId'] },
        { path: '/api/v1/clicks', filters: ['offerId', 'partnerId'] },
        { path: '/api/v1/clicks?format=csv', filters: ['offerId', 'partnerId'] },
        { path: '/api/v1/reports', filters: ['offerId', 'partnerId'] },
        { path: '/api/v1/payouts', filters: ['partnerId'] },
        { path: '/api/v1/payouts/preview?upTo=2020-01-01T00:00:00Z', filters: ['partnerId'] },
      ];
      const withQuery = (path: string, query: string) => `${path}${path.includes('?') ? '&' : '?'}${query}`;

      it("answers 422 naming the parameter for an unknown id, another brand's or another kind's", async () => {
        for (const { path, filters } of LISTS) {
          for (const filter of filters) {
            const kind = filter === 'offerId' ? 'offer' : 'partner';
            const theirs = filter === 'offerId' ? otherOfferId : otherPartnerId;
            const otherKind = filter === 'offerId' ? partnerId : offerId;
            for (const value of ['garbage', theirs, otherKind]) {
              const res = await env.request('GET', withQuery(path, `${filter}=${value}`));
              assert.deepEqual(
                detailsOf(res),
                [{ path: `query.${filter}`, message: `no ${kind} with this id` }],
                `${path} ${filter}=${value}`,
              );
            }
          }
        }
      });

      it('answers 422 for an empty filter, as the reports do for their other filters', async () => {
        for (const { path, filters } of LISTS) {
          for (const filter of filters) {
            const res = await env.request('GET', withQuery(path, `${filter}=`));
            assert.deepEqual(
              detailsOf(res),
              [{ path: `query.${filter}`, message: 'must be at least 1 character long' }],
              `${path} ${filter}=`,
            );
          }
        }
      });

      it("lists both unknown filters in one 422, and filters by the brand's own ids as before", async () => {
        const both = await env.request('GET', '/api/v1/conversions?offerId=nope&partnerId=nope');
        assert.deepEqual(detailsOf(both), [
          { path: 'query.offerId', message: 'no offer with this id' },
          { path: 'query.partnerId', message: 'no partner with this id' },
        ]);
        for (const { path, filters } of LISTS) {
          const query = filters.map((f) => `${f}=${f === 'offerId' ? offerId : partnerId}`).join('&');
          const res = await env.request('GET', withQuery(path, query));
          assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
        }
        const conversions = await env.request('GET', `/api/v1/conversions?offerId=${offerId}&partnerId=${partnerId}`);
        assert.equal(conversions.body.data.length, 1);
      });

      it('documents the rule on each filter parameter of the OpenAPI document', async () => {
        const doc = (await env.request('GET', '/api/v1/openapi.json', { key: null })).body;
        for (const [path, operationIds] of [
          ['/api/v1/conversions', ['offerId', 'partnerId']],
          ['/api/v1/clicks', ['offerId', 'partnerId']],
          ['/api/v1/reports', ['offerId', 'partnerId']],
          ['/api/v1/payouts', ['partnerId']],
          ['/api/v1/partner/conversions', ['offerId']],
        ] as const) {
          for (const name of operationIds) {
            const parameter = doc.paths[path].get.parameters.find((p: { name: string }) => p.name === name);
            assert.equal(parameter.schema.minLength, 1, `${path} ${name}`);
            assert.match(parameter.description, /is 422/, `${path} ${name}`);
          }
        }
      });
    });
  });
}
