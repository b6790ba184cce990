/**
 * The values a click's `country` can hold, so a report filter can refuse the others instead of
 * answering a report of zeros ("no traffic from there").
 *
 * Intl cannot tell: `Intl.DisplayNames` names any region ICU knows, aliases and groupings
 * included (`UK` "United Kingdom", `DD` "Germany", `EU` "European Union", `ZZ` "Unknown
 * Region", `XA` "Pseudo-Accents"), none of which a click is ever stored with. Nor can the
 * enrichment data alone: it lists the codes it has ranges for today, and a real country
 * without a range is still a country whose report is honestly empty.
 *
 * So: the 249 officially assigned ISO 3166-1 alpha-2 codes (ISO 3166 Maintenance Agency,
 * https://www.iso.org/obp/ui/#search/code/), plus the codes outside them that the enrichment
 * data (`@ip-location-db/geo-whois-asn-country`, countries.ts) writes, since a report grouped
 * by country lists those and its filter must be able to pick them:
 * - `XK`, Kosovo: user-assigned, not ISO's, but used by the registries' data; the package has
 *   ranges for it, so clicks are stored as XK. Accepted for that reason only.
 * - `AN`, the Netherlands Antilles: withdrawn in 2010, but one range of the package still
 *   carries it. Accepted for the same reason.
 * test/analytics/dimensions.test.ts checks that every code of the package is accepted, so
 * an update of the data that brings a new code fails there instead of refusing stored values.
 */
const ASSIGNED = `
  AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ
  BR BS BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM
  DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS
  GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN
  KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ
  MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM
  PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV
  SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI
  VN VU WF WS YE YT ZA ZM ZW`;
/** Codes outside ISO's assigned list that the enrichment data writes (see above). */
const FROM_ENRICHMENT = ['XK', 'AN'];

/** Every code a stored click's `country` can be, upper case. */
export const COUNTRY_CODES: ReadonlySet<string> = new Set([...ASSIGNED.trim().split(/\s+/), ...FROM_ENRICHMENT]);
