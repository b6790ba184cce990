import { type Static, Type } from '@sinclair/typebox';
import { Label } from '../../http/schemas.js';

export const AutoBanRule = Type.Object(
  {
    highRiskClicks: Type.Integer({ minimum: 1, maximum: 100_000, description: 'High-risk clicks that trigger a ban.' }),
    windowMinutes: Type.Integer({ minimum: 1, maximum: 43_200, description: 'Window the clicks are counted in.' }),
  },
  { additionalProperties: false },
);

export const Brand = Type.Object(
  {
    id: Type.String({ examples: ['brd_01JD0000000000000000000000'] }),
    name: Type.String(),
    slug: Type.String({ description: 'Used in the public application form URL.' }),
    timezone: Type.String({ description: 'IANA time zone; caps and report days count in it.' }),
    currency: Type.String({ description: 'ISO 4217 default currency.' }),
    fraudThreshold: Type.Integer({ minimum: 0, maximum: 100 }),
    autoBan: Type.Union([AutoBanRule, Type.Null()], { description: 'Automation ban rule; null when off.' }),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { $id: 'Brand', additionalProperties: false },
);
export type Brand = Static<typeof Brand>;

/** A brand's name, the one rule for the API and `affitrack brands create`. */
export const BrandName = Label(200);

export const UpdateBrandBody = Type.Object(
  {
    name: Type.Optional(BrandName),
    timezone: Type.Optional(Type.String({ format: 'time-zone', maxLength: 64 })),
    currency: Type.Optional(
      Type.String({
        format: 'currency',
        maxLength: 3,
        description: 'A current ISO 4217 code, any case; stored upper case.',
      }),
    ),
    fraudThreshold: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
    autoBan: Type.Optional(Type.Union([AutoBanRule, Type.Null()])),
  },
  { additionalProperties: false },
);
export type UpdateBrandBody = Static<typeof UpdateBrandBody>;
