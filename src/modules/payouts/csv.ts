/**
 * A payout as CSV, one line per conversion, for a bank upload or a spreadsheet. Cells are
 * quoted per RFC 4180; a cell that a spreadsheet would read as a formula (starting with
 * = + - @, tab or CR) is prefixed with `'` — partner names come from a public form.
 */
import { formatMajorUnits } from '../postbacks/macros.js';
import type { PayoutDetail } from './schemas.js';

function cell(value: string | number | null): string {
  let text = value === null ? '' : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

const HEADER = [
  'payout_id',
  'status',
  'partner_id',
  'partner_name',
  'payout_method',
  'payout_account',
  'currency',
  'conversion_id',
  'offer_id',
  'external_txn_id',
  'approved_at',
  'amount',
  'amount_cents',
];

export function payoutCsv(payout: PayoutDetail): string {
  const lines = [HEADER.join(',')];
  for (const c of payout.conversions) {
    lines.push(
      [
        payout.id,
        payout.status,
        payout.partnerId,
        payout.partnerName,
        payout.payoutMethod,
        payout.payoutAccount,
        payout.currency,
        c.conversionId,
        c.offerId,
        c.externalTxnId,
        c.approvedAt,
        formatMajorUnits(c.amountCents, payout.currency),
        c.amountCents,
      ]
        .map(cell)
        .join(','),
    );
  }
  return `${lines.join('\r\n')}\r\n`;
}
