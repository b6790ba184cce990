import { type Static, Type } from '@sinclair/typebox';
import { Nullable, Resource, Timestamp } from '../../http/schemas.js';
import { EVENT_GROUPS, EVENT_NAMES } from '../events/schemas.js';
import { Metadata, MetadataInput, MetadataPatch } from '../metadata.js';
import { MAX_URL_LENGTH } from '../urls.js';

const MAX_SECRET_LENGTH = 256;
const MIN_SECRET_LENGTH = 8;

/** What `events` may hold: an event name, `*` (every event) or `<group>.*` (e.g. `conversion.*`). */
export const EVENT_PATTERNS = [...EVENT_NAMES, '*', ...EVENT_GROUPS.map((group) => `${group}.*`)];

const EventName = Type.Union(
  EVENT_PATTERNS.map((name) => Type.Literal(name)),
  {
    description:
      'An event name from GET /api/public/webhook-events, `*` for every event, or `<group>.*` for every event of a group (e.g. `conversion.*`).',
  },
);
const Events = Type.Array(EventName, { minItems: 1, maxItems: EVENT_PATTERNS.length, uniqueItems: true });
const Url = Type.String({
  format: 'http-url',
  maxLength: MAX_URL_LENGTH,
  description:
    'Absolute http(s) URL receiving deliveries, written as it is dialled: no spaces, `//` after the scheme, `/` (not `\\`) in the path; stored and shown as given.',
});
const Secret = Type.String({
  minLength: MIN_SECRET_LENGTH,
  maxLength: MAX_SECRET_LENGTH,
  description: 'Signing secret; every delivery is then signed (X-Service-Signature). Never returned.',
});
export const SubscriptionStatus = Type.Union([Type.Literal('active'), Type.Literal('disabled')]);
/** PATCH accepts `enabled` as another name for `active` (issue #20's wording). */
const StatusInput = Type.Union([Type.Literal('active'), Type.Literal('enabled'), Type.Literal('disabled')], {
  description: 'active (or enabled) resumes deliveries and sends the parked ones; disabled parks new ones.',
});
const RateLimit = Type.Integer({
  minimum: 1,
  maximum: 1000,
  description: 'Sends per second at most to this endpoint; null = unlimited.',
});

export const SubscriptionHealth = Resource('WebhookSubscriptionHealth', {
  successRate24h: Nullable(
    Type.Number({ description: 'Share of attempts in the last 24 h that got a 2xx (0–1); null without attempts.' }),
  ),
  attempts24h: Type.Integer({ description: 'Attempts made in the last 24 h.' }),
  consecutiveFailures: Type.Integer({
    description: 'Deliveries that ended failed since the last successful attempt.',
  }),
  failingSince: Nullable(Timestamp),
  lastSuccessAt: Nullable(Timestamp),
  lastFailureAt: Nullable(Timestamp),
  disableProgressPercent: Type.Integer({
    description: 'How far the current failures have gone towards automatic disabling (100 = disabled); 0 when healthy.',
  }),
  warning: Nullable(
    Type.Union([Type.Literal(50), Type.Literal(75), Type.Literal(90)], {
      description: 'The last warning given (webhook.subscription.failing) in this run of failures.',
    }),
  ),
  parkedDeliveries: Type.Integer({ description: 'Deliveries parked while the subscription is disabled.' }),
});
export type SubscriptionHealth = Static<typeof SubscriptionHealth>;

export const Subscription = Resource('WebhookSubscription', {
  id: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  hasSecret: Type.Boolean(),
  status: SubscriptionStatus,
  disabledAt: Nullable(Timestamp),
  disabledReason: Nullable(Type.String()),
  rateLimitPerSecond: Nullable(Type.Integer()),
  previousSecretExpiresAt: Nullable(
    Type.String({
      format: 'date-time',
      description:
        'During a secret rotation: until when deliveries are also signed with an earlier secret (the later time when a second rotation within the first kept two earlier secrets signing).',
    }),
  ),
  health: SubscriptionHealth,
  metadata: Metadata,
  createdAt: Timestamp,
});
export type Subscription = Static<typeof Subscription>;

export const CreateSubscriptionBody = Type.Object(
  {
    url: Url,
    events: Events,
    secret: Type.Optional(Secret),
    rateLimitPerSecond: Type.Optional(Nullable(RateLimit)),
    metadata: Type.Optional(MetadataInput),
  },
  { additionalProperties: false },
);
export type CreateSubscriptionBody = Static<typeof CreateSubscriptionBody>;

export const UpdateSubscriptionBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    secret: Type.Optional(Nullable(Secret)),
    status: Type.Optional(StatusInput),
    discardParked: Type.Optional(
      Type.Boolean({
        description: 'With status active/enabled: delete the parked deliveries instead of sending them.',
      }),
    ),
    rateLimitPerSecond: Type.Optional(Nullable(RateLimit)),
    metadata: Type.Optional(MetadataPatch),
  },
  { additionalProperties: false },
);
export type UpdateSubscriptionBody = Static<typeof UpdateSubscriptionBody>;

export const RotateSecretBody = Type.Object(
  {
    secret: Type.Optional(Secret),
    previousSecretExpiresIn: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 7 * 86_400,
        default: 86_400,
        description:
          'Seconds the old secret keeps signing deliveries beside the new one (default 24 h; 0 = none). An earlier old secret still within its own time keeps signing too; at most 3 secrets sign at once, so a rotation that would need a fourth is 409.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type RotateSecretBody = Static<typeof RotateSecretBody>;

export const RotatedSecret = Resource('WebhookSecretRotation', {
  subscription: Subscription,
  secret: Type.String({ description: 'The new signing secret; shown this once.' }),
  previousSecretExpiresAt: Nullable(
    Type.String({
      format: 'date-time',
      description: 'Until when the secret this rotation replaced keeps signing; null when it stopped at once.',
    }),
  ),
});

export const RecoverBody = Type.Object(
  {
    since: Type.String({ format: 'date-time', description: 'Failed deliveries created at or after this instant…' }),
    until: Type.Optional(Type.String({ format: 'date-time', description: '…and before this one (default: now).' })),
    dryRun: Type.Optional(Type.Boolean({ description: 'Only count; resend nothing.' })),
  },
  { additionalProperties: false },
);
export type RecoverBody = Static<typeof RecoverBody>;

export const RecoveryResult = Resource('WebhookRecovery', {
  subscriptionId: Type.String(),
  since: Timestamp,
  until: Timestamp,
  dryRun: Type.Boolean(),
  deliveries: Type.Integer({ description: 'Failed deliveries in the window: resent, or that would be (dryRun).' }),
});
export type RecoveryResult = Static<typeof RecoveryResult>;

// The delivery log's schemas belong to the delivery engine; re-exported for existing users.
export {
  Attempt,
  Delivery,
  DeliveryKind,
  DeliveryStatus,
  DeliveryWithAttempts,
  ListDeliveriesQuery,
} from '../deliveries/schemas.js';
