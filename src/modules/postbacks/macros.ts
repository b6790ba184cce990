/**
 * Partner postback macros. Values are URL-encoded; `{payout}` is in major units with the
 * currency's own number of decimals (600 USD cents → `6.00`, 600 JPY → `600`).
 */
import { formatMajorUnits } from '../../money.js';
import type { ConversionRow } from '../conversions/repository.js';

const MACRO = /\{(click_id|conversion_id|offer_id|partner_id|payout|currency|status|sub[1-5]|txn_id)\}/g;

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
