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

/**
 * Codes ISO 4217 has had that a new amount may not name: those withdrawn since (List Three,
 * "historic denominations", as published 2025; plus HRK, SLL, ZWL, ANG, CUC and BGN, withdrawn
 * after it was taken and still in money.ts's account of stored amounts), and the current codes
 * without a minor unit (left out above: gold, bond units, SDR, test and no-currency codes).
 * Amounts may be stored in them from before (a payout in HRK made in 2022, an amount in XDR
 * accepted by an earlier version), so a filter over stored data accepts them: refusing
 * `?currency=HRK` with 422 would make those rows unfindable. Source: the codes of List Three
 * (as extracted in Home Assistant's `homeassistant/generated/currencies.py`, which leaves funds
 * out), with its two withdrawn funds XFU and XRE added.
 */
const NO_LONGER_NEW_CODES = new Set(
  (
    'ADP AFA ALK ANG AOK AON AOR ARA ARP ARY ATS AYM AZM BAD BEC BEF BEL BGJ BGK BGL BGN BOP BRB ' +
    'BRC BRE BRN BRR BUK BYB BYR CHC CSD CSJ CSK CUC CYP DDM DEM ECS ECV EEK ESA ESB ESP FIM FRF ' +
    'GEK GHC GHP GNE GNS GQE GRD GWE GWP HRD HRK IEP ILP ILR ISJ ITL LAJ LSM LTL LTT LUC LUF LUL ' +
    'LVL LVR MGF MLF MRO MTL MTP MVQ MXP MZE MZM NIC NLG PEH PEI PES PLZ PTE RHD ROK ROL RUR SDD ' +
    'SDP SIT SKK SLL SRG STD SUR TJR TMM TPE TRL UAK UGS UGW USS UYN UYP VEB VEF VNC XEU XFO XFU ' +
    'XRE YDD YUD YUM YUN ZAL ZMK ZRN ZRZ ZWC ZWD ZWL ZWN ZWR ' +
    'XAG XAU XBA XBB XBC XBD XDR XPD XPT XSU XTS XUA XXX'
  ).split(' '),
);

/**
 * Whether `code` (upper case) is or was an ISO 4217 code: what a filter over stored amounts
 * accepts. New amounts take only current codes with a minor unit (iso4217MinorUnits).
 */
export function isOrWasIso4217Code(code: string): boolean {
  return MINOR_UNITS.has(code) || NO_LONGER_NEW_CODES.has(code);
}
