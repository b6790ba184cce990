/**
 * ISO 4217's current currencies and their minor units: the one source for which codes a
 * request may name and for how many decimals an amount in each has (money.ts).
 *
 * Source: ISO 4217 List One ("current currency & funds"), as published by its maintenance
 * agency (SIX) on 2026-01-01: the list of 2024-06-25 (as shipped in the npm package
 * `currency-codes` 2.2.0) with its later amendments, which withdrew ANG (now XCG), CUC and
 * BGN (Bulgaria joined the euro) and added XAD (Arab Accounting Dinar) and XCG (Caribbean
 * Guilder); checked code by code against a second copy of the 2026-01-01 list.
 *
 * Why a table and not Intl: `Intl.NumberFormat` gives CLDR's *display* digits, which differ
 * from ISO's minor unit for 16 currencies (HUF, IDR, COP, PKR… show 0 decimals, IQD 0 for
 * ISO's 3), and `Intl.supportedValuesOf('currency')` keeps withdrawn codes (HRK, SLL, ZWL)
 * and lacks funds codes (CLF, USN, BOV, CHE). Both also change with the ICU that Node was
 * built with, and a stored amount must mean the same on every runtime.
 *
 * Left out: the codes whose minor unit ISO gives as "N.A." (gold XAU, silver XAG, XPD, XPT,
 * the bond units XBA–XBD, SDR XDR, XSU, XUA, and the test and no-currency codes XTS, XXX):
 * amounts are stored in minor units, which these do not have.
 *
 * When ISO amends the list, edit the line of the code's minor unit and the date above.
 */
const CODES_BY_MINOR_UNITS: Record<number, string> = {
  0: 'BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF',
  2:
    'AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BMD BND BOB BOV BRL BSD BTN BWP BYN BZD ' +
    'CAD CDF CHE CHF CHW CNY COP COU CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP ' +
    'GEL GHS GIP GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK ' +
    'LBP LKR LRD LSL MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO ' +
    'NOK NPR NZD PAB PEN PGK PHP PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SOS ' +
    'SRD SSP STN SVC SYP SZL THB TJS TMT TOP TRY TTD TWD TZS UAH USD USN UYU UZS VED VES WST ' +
    'XAD XCD XCG YER ZAR ZMW ZWG',
  3: 'BHD IQD JOD KWD LYD OMR TND',
  4: 'CLF UYW',
};

const MINOR_UNITS = new Map(
  Object.entries(CODES_BY_MINOR_UNITS).flatMap(([digits, codes]) =>
    codes.split(' ').map((code): [string, number] => [code, Number(digits)]),
  ),
);

/** Every current code, sorted (`AED` … `ZWG`): what a person may pick. */
export const ISO_4217_CODES: readonly string[] = [...MINOR_UNITS.keys()].sort();

/** Digits of the minor unit of a current code (2 for USD, 0 for JPY, 3 for IQD); undefined for any other. */
export function iso4217MinorUnits(code: string): number | undefined {
  return MINOR_UNITS.get(code);
}
