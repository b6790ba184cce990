/**
 * Partner postbacks as a delivery target: for a conversion event, each of the partner's
 * templates subscribed to it (those for the conversion's offer win over the partner's
 * global ones) becomes a delivery whose URL is filled in now, from the conversion as it
 * stands in the event's transaction, and sent with GET, no body. Postbacks are never paused;
 * a deleted template is removed for good, and the engine ends what was queued for it.
 */

import { prepared } from '../../db/prepared.js';
import type { Queryable } from '../../db/types.js';
import type { ConversionRow } from '../conversions/repository.js';
import type { DeliverableEvent, DeliveryTarget, PlannedDelivery } from '../deliveries/target.js';
import { SENDER_USER_AGENT } from '../deliveries/userAgent.js';
import { fillPostbackMacros } from './macros.js';
import { POSTBACK_EVENTS } from './schemas.js';

const isPostbackEvent = (type: string) => (POSTBACK_EVENTS as readonly string[]).includes(type);

const TEMPLATE_COLUMNS = ['id', 'partner_id', 'offer_id', 'url', 'events'] as const;
const postbacksOfPartner = prepared(1, (q, partnerId: string) =>
  q.selectFrom('partner_postbacks').select(TEMPLATE_COLUMNS).where('partner_id', '=', partnerId),
);
const conversionById = prepared(1, (q, id: string) => q.selectFrom('conversions').selectAll().where('id', '=', id));

/** Of `ids`, the templates that exist (a deleted one's row is gone). */
async function existingTemplates(q: Queryable, ids: string[]): Promise<Set<string>> {
  const rows = await q.selectFrom('partner_postbacks').select('id').where('id', 'in', ids).execute();
  return new Set(rows.map((r) => r.id));
}

/** The templates of the events' partners: one prepared statement for the usual single partner. */
function postbacksOf(q: Queryable, partnerIds: string[]) {
  if (partnerIds.length === 1) return postbacksOfPartner.execute(q, partnerIds[0] as string);
  return q.selectFrom('partner_postbacks').select(TEMPLATE_COLUMNS).where('partner_id', 'in', partnerIds).execute();
}

/** The conversion an event is about: as its maker handed it over, or as stored. */
async function conversionOf(q: Queryable, event: DeliverableEvent, id: string): Promise<ConversionRow | undefined> {
  if (event.subject) return event.subject as ConversionRow;
  return conversionById.first(q, id);
}

export const postbackTarget: DeliveryTarget<null> = {
  kind: 'postback',

  async plan(q, events) {
    const partnerOf = (event: DeliverableEvent) =>
      isPostbackEvent(event.type) && typeof event.data.partnerId === 'string' ? event.data.partnerId : null;
    const partnerIds = [...new Set(events.map(partnerOf).filter((id) => id !== null))];
    const templates = partnerIds.length > 0 ? await postbacksOf(q, partnerIds) : [];
    const plans: Array<Array<PlannedDelivery<null>>> = [];
    for (const event of events) {
      const { offerId, conversionId } = event.data;
      const partnerId = partnerOf(event);
      const forEvent = templates.filter(
        (t) =>
          t.partner_id === partnerId &&
          (t.offer_id === null || t.offer_id === offerId) &&
          (JSON.parse(t.events) as string[]).includes(event.type),
      );
      const specific = forEvent.filter((t) => t.offer_id !== null);
      const chosen = specific.length > 0 ? specific : forEvent;
      const conversion =
        chosen.length > 0 && typeof conversionId === 'string' ? await conversionOf(q, event, conversionId) : undefined;
      plans.push(
        conversion
          ? chosen.map((t) => ({
              targetId: t.id,
              requestUrl: fillPostbackMacros(t.url, conversion),
              method: 'GET' as const,
              details: null,
            }))
          : [],
      );
    }
    return plans;
  },

  // Only templates that still exist: a retry of a deleted one's delivery (a worker died with
  // it in flight, so the delete could not end it) waits, and is ended by the claim that finds
  // it (claims.ts). One query per claim round with postback retries; first attempts are
  // leased at fan-out and never ask.
  async details(q, targetIds) {
    const live = await existingTemplates(q, targetIds);
    return new Map([...live].map((id) => [id, null]));
  },

  async removed(q, targetIds) {
    const live = await existingTemplates(q, targetIds);
    return new Set(targetIds.filter((id) => !live.has(id)));
  },

  // A template is never paused: left out of details, it was deleted.
  async pausedReason() {
    return 'Its postback URL was deleted, and a deleted postback URL is sent nothing more.';
  },

  request(delivery) {
    return {
      url: delivery.requestUrl ?? '',
      method: delivery.method ?? 'GET',
      headers: { 'User-Agent': SENDER_USER_AGENT },
      body: null,
    };
  },
};
