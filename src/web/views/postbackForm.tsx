/**
 * The form adding or editing a postback URL: the brand's, on a partner's page in the
 * dashboard, and the partner's own, in the portal. One form, so both sides keep what was
 * entered when it is refused and show each problem beside its field.
 */
import { LoadedValues } from '../../modules/dashboard/editedFields.js';
import { CsrfField } from '../../modules/dashboard/views/components.js';
import { POSTBACK_EVENTS } from '../../modules/postbacks/schemas.js';
import { type FormValues, FormView, type RefusedForm } from './form.js';

const POSTBACK_LABELS = { url: 'Postback URL', offerId: 'Offer', events: 'Send on' };
const MACROS_HINT =
  'Macros: {conversion_id} {click_id} {offer_id} {partner_id} {payout} {currency} {status} {txn_id} {sub1}…{sub5}';

export function PostbackFormView(props: {
  csrf: string;
  action: string;
  offers: Array<{ id: string; name: string }>;
  /** What the form shows when it was not refused: a stored template's fields, or a new one's defaults. */
  values: FormValues;
  refused?: RefusedForm;
  submitLabel: string;
  /** An edit form's values as loaded: a save then changes only what was changed (editedFields.tsx). */
  loaded?: FormValues;
}) {
  const f = new FormView(props.refused?.values ?? props.values, POSTBACK_LABELS, props.refused?.error);
  return (
    <>
      {f.summary()}
      <form method="post" action={props.action} class="stack" novalidate>
        <CsrfField token={props.csrf} />
        {props.loaded ? <LoadedValues values={props.loaded} /> : ''}
        {f.input('url', { required: true, hint: MACROS_HINT, attrs: { maxlength: '2048', class: 'mono' } })}
        {f.select('offerId', [['', 'All offers'], ...props.offers.map((o): [string, string] => [o.id, o.name])])}
        {f.checkboxes(
          'events',
          POSTBACK_EVENTS.map((e): [string, string] => [e, e]),
        )}
        <div>
          <button type="submit" safe>
            {props.submitLabel}
          </button>
        </div>
      </form>
    </>
  );
}
