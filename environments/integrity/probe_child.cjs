"use strict";
// The Node side of the output judge (environments/integrity/probe.py), run as `node -e <this> FD`.
//
// It reads one JSON payload on stdin: `modules` ([path, names] pairs), `exprs` (JavaScript expressions
// over those names), optionally `sources` (path -> source: the reference, compiled from text and never
// read from disk) and `checks` (whole assert statements the reference must satisfy). Without `sources` it
// requires the workspace's modules: the agent's code, which is why the judge never runs in this process
// and never sends it an expected value. Every result goes to file descriptor FD (not stdout, which agent
// code can write to) as a typed encoding that reads only own data properties of plain objects and arrays;
// a getter, a proxy, a class instance or a function is {"t": "other"} and matches nothing.

const fs = require("node:fs");
const path = require("node:path");
const util = require("node:util");
const vm = require("node:vm");
const Module = require("node:module");

const fd = Number(process.argv[process.argv.length - 1]);
const { getPrototypeOf, getOwnPropertyDescriptor, prototype: ObjectProto } = Object;
const ownKeys = Reflect.ownKeys;
const isArray = Array.isArray;
const ArrayProto = Array.prototype;
const isProxy = util.types.isProxy;
const isDate = util.types.isDate;
const getTime = Date.prototype.getTime;
const stringify = JSON.stringify;
const writeSync = fs.writeSync;
const MAX_DEPTH = 20;

function dataValue(obj, key) {
  const desc = getOwnPropertyDescriptor(obj, key);
  return desc && "value" in desc ? { ok: true, value: desc.value } : { ok: false };
}

function encode(value, depth) {
  if (depth > MAX_DEPTH) return { t: "too_deep" };
  switch (typeof value) {
    case "string":
      return { t: "str", v: value };
    case "boolean":
      return { t: "bool", v: value };
    case "number":
      if (Object.is(value, -0)) return { t: "num", v: "-0" };
      return { t: "num", v: Number.isFinite(value) ? value : String(value) };
    case "undefined":
      return { t: "undefined" };
    case "bigint":
      return { t: "bigint", v: String(value) };
    case "object":
      break;
    default:
      return { t: "other" };
  }
  if (value === null) return { t: "none", v: null };
  if (isProxy(value)) return { t: "other" };
  const proto = getPrototypeOf(value);
  if (isArray(value) && proto === ArrayProto) {
    const length = dataValue(value, "length");
    if (!length.ok || ownKeys(value).length !== length.value + 1) return { t: "other" };
    const items = [];
    for (let i = 0; i < length.value; i++) {
      const item = dataValue(value, String(i));
      if (!item.ok) return { t: "other" };
      items.push(encode(item.value, depth + 1));
    }
    return { t: "list", v: items };
  }
  if (isDate(value) && proto === Date.prototype) return { t: "date", v: getTime.call(value) };
  if (proto !== ObjectProto && proto !== null) return { t: "other" };
  const pairs = [];
  for (const key of ownKeys(value)) {
    const item = typeof key === "string" ? dataValue(value, key) : { ok: false };
    if (!item.ok) return { t: "other" };
    pairs.push([key, encode(item.value, depth + 1)]);
  }
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return { t: "object", v: pairs };
}

function raised(error) {
  const types = [];
  let proto = error !== null && (typeof error === "object" || typeof error === "function") ? error : null;
  for (let i = 0; proto && i < 10; i++) {
    proto = isProxy(proto) ? null : getPrototypeOf(proto);
    const ctor = proto && dataValue(proto, "constructor");
    const name = ctor && ctor.ok && ctor.value ? dataValue(ctor.value, "name") : { ok: false };
    if (name.ok && typeof name.value === "string") types.push(name.value);
  }
  return { t: "raised", types };
}

function load(rel, sources) {
  const file = path.resolve(rel);
  if (!sources) return require(file);
  const module = new Module(file, null);
  module.filename = file;
  vm.runInThisContext(Module.wrap(sources[rel]), { filename: file })(
    module.exports, (id) => module.require(id), module, file, path.dirname(file));
  return module.exports;
}

function main(payload) {
  const names = [];
  const values = [];
  try {
    for (const [rel, exported] of payload.modules) {
      const loaded = load(rel, payload.sources);
      for (const name of exported) {
        names.push(name);
        values.push(loaded[name]);
      }
    }
  } catch (error) {
    return { outputs: payload.exprs.map(() => ({ t: "setup_failed", types: raised(error).types })) };
  }
  const outputs = payload.exprs.map((expr) => {
    try {
      return encode(new Function(...names, `"use strict"; return (${expr});`)(...values), 0);
    } catch (error) {
      return raised(error);
    }
  });
  const failed = [];
  const assert = require("node:assert/strict");
  for (const [label, statement] of payload.checks || []) {
    try {
      new Function("assert", ...names, statement)(assert, ...values);
    } catch (error) {
      failed.push(label);
    }
  }
  return { outputs, failed_checks: failed };
}

const chunks = [];
for (let n; (n = fs.readSync(0, (chunks[chunks.length] = Buffer.alloc(65536)), 0, 65536, null)) > 0; ) {
  chunks[chunks.length - 1] = chunks[chunks.length - 1].subarray(0, n);
}
chunks.pop();
let out = Buffer.from(stringify(main(JSON.parse(Buffer.concat(chunks).toString("utf8")))));
while (out.length) out = out.subarray(writeSync(fd, out));
fs.closeSync(fd);
