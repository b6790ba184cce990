/**
 * Rates shown rounded (EPC, a webhook's success rate) are ratios of two counts. Rounding
 * `(a / b) * 100` goes wrong on exact halves: 41 / 40 = 1.025, but `1.025 * 100` is
 * 102.49999999999999 in binary floating point, so it rounded to 1.02 while 67 / 40 = 1.675
 * rounded to 1.68. Scaling the numerator first rounds the exact quotient instead.
 */

/**
 * `numerator / denominator` rounded half up to `decimals` places (41, 40, 2 → 1.03). Exact
 * while `numerator * 10^decimals` stays below 2^52 (4.5 × 10^13 cents at 2 decimals): the
 * scaled numerator is an exact integer, a quotient that is exactly a half is representable and
 * comes out exactly, and any other lies at least 1 / (2 × denominator) from a half, farther
 * than the division's rounding error. `Math.round` then takes a half up; the last division
 * gives the number closest to the decimal, which prints as it (1.03).
 */
export function roundedRatio(numerator: number, denominator: number, decimals: number): number {
  const scale = 10 ** decimals;
  return Math.round((numerator * scale) / denominator) / scale;
}
