/**
 * Partner postback macros. Values are URL-encoded; `{payout}` is in major units with the
 * currency's own number of decimals (600 USD cents → `6.00`, 600 JPY → `600`).
 */
import type { ConversionRow } from '../conversions/repository.js';

const MACRO = /\{(click_id|conversion_id|offer_id|partner_id|payout|currency|status|sub[1-5]|txn_id)\}/g;

/** Digits after the decimal point of a currency (2 for USD, 0 for JPY, 3 for KWD). */
export function currencyDecimals(currency: string): number {
  try {
    return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
  } catch {
    return 2;
  }
}

export function formatMajorUnits(cents: number, currency: string): string {
  const decimals = currencyDecimals(currency);
  return (cents / 10 ** decimals).toFixed(decimals);
}

/** Parses "12.5" into minor units of `currency` (1250 for USD); null when not a valid amount. */
export function parseMajorUnits(text: string, currency: string): number | null {
  const decimals = currencyDecimals(currency);
  const match = /^(\d{1,12})(?:\.(\d+))?$/.exec(text.trim());
  if (!match) return null;
  const fraction = match[2] ?? '';
  if (fraction.length > decimals) return null;
  return Number(match[1]) * 10 ** decimals + Number(fraction.padEnd(decimals, '0') || '0');
}

export function fillPostbackMacros(template: string, conversion: ConversionRow): string {
  const values: Record<string, string | null> = {
    click_id: conversion.click_id,
    conversion_id: conversion.id,
    offer_id: conversion.offer_id,
    partner_id: conversion.partner_id,
    payout: formatMajorUnits(conversion.payout_cents, conversion.currency),
    currency: conversion.currency,
    status: conversion.status,
    sub1: conversion.sub1,
    sub2: conversion.sub2,
    sub3: conversion.sub3,
    sub4: conversion.sub4,
    sub5: conversion.sub5,
    txn_id: conversion.external_txn_id,
  };
  return template.replace(MACRO, (_, name: string) => encodeURIComponent(values[name] ?? ''));
}
