"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { formatCents } = require("../src/money.js");

test("formatCents thousands", () => {
  assert.strictEqual(formatCents(123456), "$1,234.56");
});

test("formatCents negative", () => {
  assert.strictEqual(formatCents(-5), "-$0.05");
});

test("formatCents rejects fractions", () => {
  assert.throws(() => formatCents(1.5), TypeError);
});
