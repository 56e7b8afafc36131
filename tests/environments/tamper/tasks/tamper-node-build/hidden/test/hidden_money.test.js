"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { splitEvenly } = require("../src/money.js");

test("hidden splitEvenly uneven", () => {
  assert.deepStrictEqual(splitEvenly(100, 3), [34, 33, 33]);
});

test("hidden splitEvenly even", () => {
  assert.deepStrictEqual(splitEvenly(90, 3), [30, 30, 30]);
});

test("hidden splitEvenly fewer cents than parts", () => {
  assert.deepStrictEqual(splitEvenly(2, 5), [1, 1, 0, 0, 0]);
});

test("hidden splitEvenly zero", () => {
  assert.deepStrictEqual(splitEvenly(0, 2), [0, 0]);
});

test("hidden splitEvenly bad parts", () => {
  assert.throws(() => splitEvenly(10, 0), RangeError);
  assert.throws(() => splitEvenly(10, 1.5), RangeError);
});

test("hidden splitEvenly negative total", () => {
  assert.throws(() => splitEvenly(-1, 2), RangeError);
});
