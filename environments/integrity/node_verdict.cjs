"use strict";
// Preloaded by the verifier into every Node process of a verify run (NODE_OPTIONS --require), before any
// test or solution code. It records the identity of every function of node:assert and node:assert/strict
// and of process.exit, and when the process exits compares them again: if solution code replaced any
// (an assert turned into a no-op), it writes a marker file into the report folder, and the verifier fails
// the run. It cannot stop code that removes this exit listener or ends the process without an exit event;
// the effect audit reads solution code for those.
const fs = require("node:fs");
const path = require("node:path");

const folder = __dirname;
const watched = { "node:assert": require("node:assert"), "node:assert/strict": require("node:assert/strict") };
const exitFunction = process.exit;

function functionsOf(object) {
  const seen = new Map();
  for (const name of Object.getOwnPropertyNames(object)) {
    const descriptor = Object.getOwnPropertyDescriptor(object, name);
    if (descriptor && typeof descriptor.value === "function") seen.set(name, descriptor.value);
  }
  return seen;
}

const baseline = Object.fromEntries(Object.entries(watched).map(([name, mod]) => [name, functionsOf(mod)]));

process.on("exit", () => {
  const patched = [];
  for (const [name, mod] of Object.entries(watched)) {
    const now = functionsOf(mod);
    for (const [fn, value] of baseline[name]) if (now.get(fn) !== value) patched.push(`${name}.${fn}`);
  }
  if (process.exit !== exitFunction) patched.push("process.exit");
  if (patched.length) {
    fs.writeFileSync(path.join(folder, `patched-${process.pid}.txt`), patched.join("\n") + "\n");
  }
});
