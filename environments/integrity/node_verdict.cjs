"use strict";
// The verifier's reporter for Node's test runner, loaded twice by the same file:
// - preloaded (NODE_OPTIONS --require) into every Node process of a verify run, before any test or
//   solution code;
// - as a custom --test-reporter in the runner process (`node --test`), which runs no test file itself
//   (each file runs in a child process).
// In the runner it takes its channel and hides it: the key file the verifier wrote next to it is read and
// deleted, and the report descriptor's number is taken out of the environment (HA_VERDICT_FD), so the
// children, where solution code runs, inherit neither. Every record is a line {"body", "mac"} sealed with
// HMAC-SHA256 under that key: a start record at load, and a final record with every test's TAP line only
// when the test event stream ends normally. A runner that was killed, or a report written by anything
// else, fails the seal (reports.unseal_report).
// In a child it records the identity of every function of node:assert and node:assert/strict and of
// process.exit and process.reallyExit, and checks them again when the process ends, through an exit
// listener and a wrapped process.reallyExit (so an exit that skips the listeners still runs the check):
// a replaced function leaves a marker file and ends the child with status 1, which fails its test file in
// the runner's own stream. It also refuses native addons from the workspace (process.dlopen).
// It cannot stop code that ends a child with status 0 without an exit event or reallyExit after its tests
// were reported with a patched assert; the effect audit reads solution code for that.
const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");

const folder = __dirname;
const KEY_FILE = "seal.key";
const FD_VARIABLE = "HA_VERDICT_FD";
const isRunner = process.execArgv.includes("--test") && !process.env.NODE_TEST_CONTEXT;

function seal(key, body) {
  const text = JSON.stringify(body);
  return JSON.stringify({ body: text, mac: crypto.createHmac("sha256", key).update(text).digest("hex") });
}

function takeChannel() {
  const fdText = process.env[FD_VARIABLE];
  delete process.env[FD_VARIABLE];
  const keyPath = path.join(folder, KEY_FILE);
  try {
    const key = fs.readFileSync(keyPath);
    fs.unlinkSync(keyPath);
    const fd = Number.parseInt(fdText, 10);
    fs.fstatSync(fd);
    return key.length ? { key, fd } : null;
  } catch {
    return null;
  }
}

const channel = isRunner ? takeChannel() : null;

function emit(body) {
  if (channel) fs.writeSync(channel.fd, seal(channel.key, body) + "\n");
}

emit({ kind: "start", pid: process.pid });

function tapLine(type, data, number) {
  const directive = data.skip ? " # SKIP" : data.todo ? " # TODO" : "";
  const name = String(data.name).replace(/[\r\n]+/g, " ");
  return `${"    ".repeat(data.nesting || 0)}${type === "test:pass" ? "ok" : "not ok"} ${number} - ${name}${directive}`;
}

async function* verdictReporter(source) {
  const tests = [];
  for await (const event of source) {
    if (event.type === "test:pass" || event.type === "test:fail") {
      tests.push(tapLine(event.type, event.data, tests.length + 1));
    }
  }
  emit({ kind: "final", finished: true, tests, count: tests.length });
}

module.exports = verdictReporter;

if (!isRunner) {
  const watched = { "node:assert": require("node:assert"), "node:assert/strict": require("node:assert/strict") };
  const exitFunction = process.exit;
  const reallyExit = process.reallyExit;
  const dlopen = process.dlopen;
  const workspace = fs.realpathSync(process.cwd());

  const functionsOf = (object) => {
    const seen = new Map();
    for (const name of Object.getOwnPropertyNames(object)) {
      const descriptor = Object.getOwnPropertyDescriptor(object, name);
      if (descriptor && typeof descriptor.value === "function") seen.set(name, descriptor.value);
    }
    return seen;
  };
  const baseline = Object.fromEntries(Object.entries(watched).map(([name, mod]) => [name, functionsOf(mod)]));
  let checked = null;

  const check = () => {
    if (checked) return checked;
    const patched = [];
    for (const [name, mod] of Object.entries(watched)) {
      const now = functionsOf(mod);
      for (const [fn, value] of baseline[name]) if (now.get(fn) !== value) patched.push(`${name}.${fn}`);
    }
    if (process.exit !== exitFunction) patched.push("process.exit");
    if (process.reallyExit !== guardedExit) patched.push("process.reallyExit");
    if (patched.length) {
      try {
        fs.writeFileSync(path.join(folder, `patched-${process.pid}.txt`), patched.join("\n") + "\n");
      } catch {
        // the marker is a second signal; the exit status below is the one the runner sees
      }
    }
    checked = patched;
    return patched;
  };

  function guardedExit(code) {
    return reallyExit.call(process, check().length ? 1 : code);
  }
  process.reallyExit = guardedExit;
  process.on("exit", () => {
    if (check().length) reallyExit.call(process, 1); // before any later listener can reset the status
  });

  process.dlopen = function guardedDlopen(module, filename, ...rest) {
    let full = String(filename);
    try {
      full = fs.realpathSync(full);
    } catch {
      // a missing file fails in dlopen itself
    }
    if (full === workspace || full.startsWith(workspace + path.sep)) {
      throw new Error(`loading the native addon ${filename} from the workspace is refused while tests run`);
    }
    return dlopen.call(process, module, filename, ...rest);
  };
}
