import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { pageSize, toPage } from '../../http/pagination.js';
import { errorResponses, KEYED_ERRORS, ListOf, pageQuery, Resource, Timestamp } from '../../http/schemas.js';
import {
  addBlocklistEntry,
  blocklistToApi,
  listBlocklist,
  MAX_BLOCKLIST_ENTRIES,
  removeBlocklistEntry,
} from './blocklist.js';

const EntryType = Type.Union([Type.Literal('ip'), Type.Literal('cidr'), Type.Literal('userAgent')]);
const Entry = Resource('BlocklistEntry', {
  id: Type.String(),
  type: EntryType,
  value: Type.String(),
  createdAt: Timestamp,
});
const security = [{ bearerAuth: [] }];
const tags = ['fraud'];

export function fraudRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/fraud/blocklist',
      {
        schema: {
          operationId: 'listBlocklistEntries',
          tags,
          summary: "The brand's fraud blocklist (IPs, CIDR ranges, user-agent substrings).",
          security,
          querystring: Type.Object(pageQuery('blk'), { additionalProperties: false }),
          response: { 200: ListOf(Entry), ...errorResponses(...KEYED_ERRORS, 422) },
        },
      },
      async (request) => {
        const limit = pageSize(request.query.limit);
        return toPage(
          await listBlocklist(ctx, request.auth.brandId, { ...request.query, limit }),
          limit,
          blocklistToApi,
        );
      },
    );

    app.post(
      '/fraud/blocklist',
      {
        schema: {
          operationId: 'addBlocklistEntry',
          tags,
          summary: 'Add a blocklist entry; clicks matching it get the blocklist_hit signal.',
          description: `A brand's blocklist holds at most ${MAX_BLOCKLIST_ENTRIES.toLocaleString('en')} entries; one more is 422 with the detail path \`blocklist\` (delete entries first).`,
          security,
          body: Type.Object(
            { type: EntryType, value: Type.String({ minLength: 1, maxLength: 512 }) },
            { additionalProperties: false },
          ),
          response: { 201: Entry, ...errorResponses(...KEYED_ERRORS, 400, 422) },
        },
      },
      async (request, reply) =>
        reply.code(201).send(blocklistToApi(await addBlocklistEntry(ctx, request.auth.brandId, request.body))),
    );

    app.delete(
      '/fraud/blocklist/:id',
      {
        schema: {
          operationId: 'deleteBlocklistEntry',
          tags,
          summary: 'Remove a blocklist entry.',
          security,
          params: Type.Object({ id: Type.String() }),
          response: { 204: Type.Null(), ...errorResponses(...KEYED_ERRORS, 404) },
        },
      },
      async (request, reply) => {
        await removeBlocklistEntry(ctx, request.auth.brandId, request.params.id);
        return reply.code(204).send(null);
      },
    );
  };
}
