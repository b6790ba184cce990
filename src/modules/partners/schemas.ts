import { type Static, Type } from '@sinclair/typebox';
import { Label, Nullable, NullableTimestamp, pageQuery, Resource, Timestamp } from '../../http/schemas.js';
import { Metadata, MetadataInput, MetadataPatch } from '../metadata.js';
import { MAX_URL_LENGTH } from '../urls.js';

export const PartnerStatus = Type.Union([Type.Literal('applicant'), Type.Literal('active'), Type.Literal('banned')]);

export const Partner = Resource('Partner', {
  id: Type.String(),
  name: Type.String(),
  email: Type.String(),
  website: Nullable(Type.String()),
  status: PartnerStatus,
  banReason: Nullable(Type.String()),
  createdAt: Timestamp,
  approvedAt: NullableTimestamp,
  bannedAt: NullableTimestamp,
  metadata: Metadata,
});
export type Partner = Static<typeof Partner>;

const Name = Label(200);
const Email = Type.String({ format: 'email', maxLength: 254 });
const Website = Type.String({ format: 'http-url', maxLength: MAX_URL_LENGTH, description: 'Absolute http(s) URL.' });

export const CreatePartnerBody = Type.Object(
  { name: Name, email: Email, website: Type.Optional(Nullable(Website)), metadata: Type.Optional(MetadataInput) },
  { additionalProperties: false },
);

export const UpdatePartnerBody = Type.Object(
  { metadata: Type.Optional(MetadataPatch) },
  { additionalProperties: false },
);
export type CreatePartnerBody = Static<typeof CreatePartnerBody>;

export const ApplyBody = Type.Object(
  {
    brandSlug: Type.String({ minLength: 1, maxLength: 100, description: 'Slug of the brand applied to.' }),
    name: Name,
    email: Email,
    website: Type.Optional(Nullable(Website)),
  },
  { additionalProperties: false },
);
export type ApplyBody = Static<typeof ApplyBody>;

export const BanBody = Type.Object(
  { reason: Type.Optional(Nullable(Type.String({ maxLength: 500 }))) },
  { additionalProperties: false },
);

export const ListPartnersQuery = Type.Object(
  { status: Type.Optional(PartnerStatus), ...pageQuery('prt') },
  { additionalProperties: false },
);
