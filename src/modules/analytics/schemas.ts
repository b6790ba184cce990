import { Type } from '@sinclair/typebox';
import { Nullable } from '../../http/schemas.js';
import { DEVICE_TYPES, type DeviceType } from './dimensions.js';

/** The click enrichment as API fields: on clicks, and on the conversions attributed to them. */
export const VisitorFields = {
  country: Nullable(
    Type.String({ description: 'ISO 3166-1 alpha-2 country of the click’s IP address; null when unknown.' }),
  ),
  deviceType: Nullable(
    Type.Union(
      DEVICE_TYPES.map((t) => Type.Literal(t)),
      { description: 'From the click’s User-Agent; null when not recorded (no click, or before enrichment).' },
    ),
  ),
  os: Nullable(Type.String({ description: 'Operating system from the User-Agent, e.g. iOS.' })),
  browser: Nullable(Type.String({ description: 'Browser from the User-Agent, e.g. Chrome.' })),
  referrerHost: Nullable(Type.String({ description: 'Host name of the click’s Referer header.' })),
};

interface VisitorColumns {
  country: string | null;
  device_type: string | null;
  os: string | null;
  browser: string | null;
  referrer_host: string | null;
}

export function visitorToApi(row: VisitorColumns) {
  return {
    country: row.country,
    deviceType: row.device_type as DeviceType | null,
    os: row.os,
    browser: row.browser,
    referrerHost: row.referrer_host,
  };
}
