"use strict";

/** Format integer cents as a dollar string: 123456 -> "$1,234.56", -5 -> "-$0.05". */
function formatCents(cents) {
  if (!Number.isInteger(cents)) throw new TypeError("cents must be an integer");
  const sign = cents < 0 ? "-" : "";
  const abs = Math.abs(cents);
  const dollars = Math.floor(abs / 100).toLocaleString("en-US");
  return `${sign}$${dollars}.${String(abs % 100).padStart(2, "0")}`;
}

/** Split `totalCents` into `parts` shares differing by at most one cent, larger shares first. */
function splitEvenly(totalCents, parts) {
  if (!Number.isInteger(parts) || parts < 1) throw new RangeError("parts must be a positive integer");
  if (!Number.isInteger(totalCents) || totalCents < 0) {
    throw new RangeError("totalCents must be a non-negative integer");
  }
  const share = Math.floor(totalCents / parts);
  const remainder = totalCents - share * parts;
  return Array.from({ length: parts }, (_, i) => share + (i < remainder ? 1 : 0));
}

module.exports = { formatCents, splitEvenly };
