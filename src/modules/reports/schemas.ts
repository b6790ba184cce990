import { type Static, Type } from '@sinclair/typebox';
import { IdFilter, Nullable, Resource } from '../../http/schemas.js';
import { FormatQuery } from '../analytics/csv.js';
import { ATTRIBUTES } from '../analytics/dimensions.js';

export const TIME_KEYS = ['day', 'week', 'month'] as const;
export const GROUP_KEYS = [...TIME_KEYS, 'offer', 'partner', ...ATTRIBUTES] as const;
export type GroupKey = (typeof GROUP_KEYS)[number];
/** Dimensions one report may be split by at once. */
export const MAX_GROUP_KEYS = 3;
/** Days `to` may be after `from`: two years (a leap day included) per report, so one request reads a bounded number of rollup rows. */
export const MAX_RANGE_DAYS = 731;
const RANGE_LIMIT = `\`to\` may be at most ${MAX_RANGE_DAYS} days after \`from\` (a longer range is 422 on \`query.to\`: ask for it in parts).`;

const Day = (description: string) => Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description });
const Filter = (description: string) => Type.Optional(Type.String({ minLength: 1, maxLength: 255, description }));

export const ReportQuery = Type.Object(
  {
    from: Type.Optional(
      Day(`First day (YYYY-MM-DD, brand time zone), inclusive; default 29 days before \`to\`. ${RANGE_LIMIT}`),
    ),
    to: Type.Optional(Day(`Last day (YYYY-MM-DD, brand time zone), inclusive; default today. ${RANGE_LIMIT}`)),
    offerId: IdFilter('offer'),
    partnerId: IdFilter('partner'),
    groupBy: Type.Optional(
      Type.String({
        maxLength: 200,
        description: `Comma list of up to ${MAX_GROUP_KEYS} of ${GROUP_KEYS.join('|')} (one time unit at most).`,
      }),
    ),
    country: Filter(
      'Only clicks from this country (ISO 3166-1 alpha-2, e.g. DE, GB for the United Kingdom; any case) and their conversions. Another value is 422.',
    ),
    deviceType: Filter('desktop, mobile, tablet, bot or other (any case). Another value is 422.'),
    os: Filter('Operating system name exactly as reported (case included), e.g. iOS.'),
    browser: Filter('Browser name exactly as reported (case included), e.g. Chrome.'),
    referrerHost: Filter(
      'Host name of the referring page, e.g. news.example (any case; no scheme, port or path, which are 422).',
    ),
    sub1: Filter('Sub-id 1 value.'),
    sub2: Filter('Sub-id 2 value.'),
    sub3: Filter('Sub-id 3 value.'),
    sub4: Filter('Sub-id 4 value.'),
    sub5: Filter('Sub-id 5 value.'),
    hour: Type.Optional(Type.String({ pattern: '^([01]\\d|2[0-3])$', description: 'Brand-local hour of day, 00–23.' })),
    ...FormatQuery,
  },
  { additionalProperties: false },
);
export type ReportQuery = Static<typeof ReportQuery>;

const counts = {
  clicks: Type.Integer(),
  conversions: Type.Integer({ description: 'pending + approved' }),
  approved: Type.Integer(),
  pending: Type.Integer(),
  rejected: Type.Integer(),
  conversionRate: Type.Number({ description: 'conversions / clicks, unrounded (0 without clicks).' }),
};
const money = {
  revenueCents: Type.Integer({ description: 'Over pending + approved conversions, in `currency`.' }),
  payoutCents: Type.Integer({ description: 'Over pending + approved conversions, in `currency`.' }),
  profitCents: Type.Integer({ description: 'revenueCents − payoutCents' }),
  epcCents: Type.Number({ description: 'payoutCents / clicks, rounded half up to 2 decimals (0 without clicks).' }),
};
const Currency = Type.String({
  description: 'ISO 4217 code of every amount in the row. Clicks count in their offer’s currency.',
});
export type Metrics = { [K in keyof typeof counts | keyof typeof money]: number };

const NullableKey = (description: string) => Type.Optional(Nullable(Type.String(), { description }));

export const ReportRow = Resource('ReportRow', {
  day: Type.Optional(Type.String()),
  week: Type.Optional(Type.String({ description: 'YYYY-MM-DD of the Monday starting the week.' })),
  month: Type.Optional(Type.String({ description: 'YYYY-MM' })),
  offerId: Type.Optional(Type.String()),
  partnerId: Type.Optional(Type.String()),
  country: NullableKey('ISO 3166 alpha-2; null when unknown.'),
  deviceType: NullableKey('desktop | mobile | tablet | bot | other; null when not recorded.'),
  os: NullableKey('null when unknown.'),
  browser: NullableKey('null when unknown.'),
  referrerHost: NullableKey('null without a referrer.'),
  sub1: NullableKey('null when not given.'),
  sub2: NullableKey('null when not given.'),
  sub3: NullableKey('null when not given.'),
  sub4: NullableKey('null when not given.'),
  sub5: NullableKey('null when not given.'),
  hour: NullableKey('Brand-local hour of day, 00–23.'),
  currency: Currency,
  ...counts,
  ...money,
});
export type ReportRow = Static<typeof ReportRow>;

export const CurrencyTotals = Resource('CurrencyTotals', { currency: Currency, ...counts, ...money });

export const Report = Resource('Report', {
  from: Type.String(),
  to: Type.String(),
  groupBy: Type.Array(Type.String()),
  data: Type.Array(ReportRow, { description: 'Rows are split by currency as well as by `groupBy`.' }),
  totals: Type.Object(
    {
      currency: Nullable(Type.String(), {
        description: 'The currency of the amounts; null when the report spans several (see totalsByCurrency).',
      }),
      ...counts,
      revenueCents: Nullable(Type.Integer(), { description: 'null across several currencies.' }),
      payoutCents: Nullable(Type.Integer(), { description: 'null across several currencies.' }),
      profitCents: Nullable(Type.Integer(), { description: 'null across several currencies.' }),
      epcCents: Nullable(Type.Number(), { description: 'null across several currencies.' }),
    },
    {
      additionalProperties: false,
      description: 'Counts over the whole report; amounts only when it has one currency.',
    },
  ),
  totalsByCurrency: Type.Array(CurrencyTotals, {
    description:
      'One entry per currency in the report (the brand currency when it is empty); money is never summed across currencies.',
  }),
});
export type Report = Static<typeof Report>;
