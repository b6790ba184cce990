/**
 * The From and To fields of the overview and the conversions: a range the service refuses
 * (a day the calendar lacks, `from` after `to`; paths `query.from`/`query.to`) comes back
 * like a refused form, each problem beside its field and the focus on the summary.
 */
import type { ApiError } from '../../../http/errors.js';
import { FormView } from '../../../web/views/form.js';

const QUERY_PATHS = { 'query.from': 'from', 'query.to': 'to' };

export class DayRangeForm extends FormView {
  constructor(values: { from: string; to: string }, labels: { from: string; to: string }, error?: ApiError) {
    super(values, labels, error, QUERY_PATHS);
  }
}
