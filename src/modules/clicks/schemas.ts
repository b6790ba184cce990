import { type Static, Type } from '@sinclair/typebox';
import { IdFilter, Nullable, pageQuery, Resource, Timestamp } from '../../http/schemas.js';
import { FormatQuery } from '../analytics/csv.js';
import { VisitorFields } from '../analytics/schemas.js';

export const Click = Resource('Click', {
  id: Type.String(),
  offerId: Type.String(),
  partnerId: Type.String(),
  ip: Type.String(),
  userAgent: Nullable(Type.String()),
  referer: Nullable(Type.String()),
  sub1: Nullable(Type.String()),
  sub2: Nullable(Type.String()),
  sub3: Nullable(Type.String()),
  sub4: Nullable(Type.String()),
  sub5: Nullable(Type.String()),
  fraudScore: Type.Integer({ minimum: 0, maximum: 100 }),
  fraudSignals: Type.Array(Type.String()),
  highRisk: Type.Boolean({ description: "The score exceeded the brand's threshold when the click was made." }),
  ...VisitorFields,
  createdAt: Timestamp,
});
export type Click = Static<typeof Click>;

export const ListClicksQuery = Type.Object(
  {
    offerId: IdFilter('offer'),
    partnerId: IdFilter('partner'),
    highRisk: Type.Optional(Type.Boolean()),
    ...pageQuery('clk'),
    ...FormatQuery,
  },
  { additionalProperties: false },
);
export type ListClicksQuery = Static<typeof ListClicksQuery>;

/**
 * Tracking links travel through ad networks and must never lose a click to bad input:
 * any query is accepted (unknown parameters ignored; a repeated sub keeps its first value;
 * long values are cut) — see `subsFromQuery`.
 */
export const TrackingQuery = Type.Object({}, { additionalProperties: true });
