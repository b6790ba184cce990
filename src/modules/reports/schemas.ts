import { type Static, Type } from '@sinclair/typebox';

export const GROUP_KEYS = ['day', 'week', 'month', 'offer', 'partner'] as const;
export type GroupKey = (typeof GROUP_KEYS)[number];

const Day = (description: string) => Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description });

export const ReportQuery = Type.Object(
  {
    from: Type.Optional(Day('First day (YYYY-MM-DD, brand time zone), inclusive; default 29 days before `to`.')),
    to: Type.Optional(Day('Last day (YYYY-MM-DD, brand time zone), inclusive; default today.')),
    offerId: Type.Optional(Type.String({ maxLength: 64 })),
    partnerId: Type.Optional(Type.String({ maxLength: 64 })),
    groupBy: Type.Optional(
      Type.String({
        maxLength: 100,
        description: 'Comma list of day|week|month|offer|partner (one time unit at most).',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ReportQuery = Static<typeof ReportQuery>;

const metrics = {
  clicks: Type.Integer(),
  conversions: Type.Integer({ description: 'pending + approved' }),
  approved: Type.Integer(),
  pending: Type.Integer(),
  rejected: Type.Integer(),
  revenueCents: Type.Integer({ description: 'Over pending + approved conversions.' }),
  payoutCents: Type.Integer({ description: 'Over pending + approved conversions.' }),
  profitCents: Type.Integer({ description: 'revenueCents − payoutCents' }),
  conversionRate: Type.Number({ description: 'conversions / clicks (0 without clicks).' }),
  epcCents: Type.Number({ description: 'payoutCents / clicks, 2 decimals (0 without clicks).' }),
};
export type Metrics = { [K in keyof typeof metrics]: number };

export const ReportRow = Type.Object({
  day: Type.Optional(Type.String()),
  week: Type.Optional(Type.String({ description: 'YYYY-MM-DD of the Monday starting the week.' })),
  month: Type.Optional(Type.String({ description: 'YYYY-MM' })),
  offerId: Type.Optional(Type.String()),
  partnerId: Type.Optional(Type.String()),
  ...metrics,
});

export const Report = Type.Object({
  from: Type.String(),
  to: Type.String(),
  groupBy: Type.Array(Type.String()),
  data: Type.Array(ReportRow),
  totals: Type.Object(metrics),
});
export type Report = Static<typeof Report>;
