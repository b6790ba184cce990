/**
 * Partner postbacks as a delivery target: for a conversion event, each of the partner's
 * templates subscribed to it (those for the conversion's offer win over the partner's
 * global ones) becomes a delivery whose URL is filled in now, from the conversion as it
 * stands in the event's transaction, and sent with GET, no body. Postbacks are never paused.
 */
import { prepared } from '../../db/prepared.js';
import type { DeliveryTarget } from '../deliveries/target.js';
import { fillPostbackMacros } from './macros.js';
import { POSTBACK_EVENTS } from './schemas.js';

const USER_AGENT = 'Affitrack-Webhooks/1.0';
const isPostbackEvent = (type: string) => (POSTBACK_EVENTS as readonly string[]).includes(type);

const postbacksOfPartner = prepared(1, (q, partnerId: string) =>
  q.selectFrom('partner_postbacks').select(['id', 'offer_id', 'url', 'events']).where('partner_id', '=', partnerId),
);
const conversionById = prepared(1, (q, id: string) => q.selectFrom('conversions').selectAll().where('id', '=', id));

export const postbackTarget: DeliveryTarget<null> = {
  kind: 'postback',

  async plan(trx, event) {
    const { partnerId, offerId, conversionId } = event.data;
    if (!isPostbackEvent(event.type) || typeof partnerId !== 'string' || typeof conversionId !== 'string') return [];
    const forEvent = (await postbacksOfPartner.execute(trx, partnerId)).filter(
      (t) => (t.offer_id === null || t.offer_id === offerId) && (JSON.parse(t.events) as string[]).includes(event.type),
    );
    const specific = forEvent.filter((t) => t.offer_id !== null);
    const chosen = specific.length > 0 ? specific : forEvent;
    if (chosen.length === 0) return [];
    const conversion = await conversionById.first(trx, conversionId);
    if (!conversion) return [];
    return chosen.map((t) => ({
      targetId: t.id,
      requestUrl: fillPostbackMacros(t.url, conversion),
      method: 'GET' as const,
      details: null,
    }));
  },

  async details(_q, targetIds) {
    return new Map(targetIds.map((id) => [id, null]));
  },

  request(delivery) {
    return {
      url: delivery.requestUrl ?? '',
      method: delivery.method ?? 'GET',
      headers: { 'user-agent': USER_AGENT },
      body: null,
    };
  },
};
