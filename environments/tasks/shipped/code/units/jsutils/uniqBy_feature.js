/** Items with a distinct key, keeping the first of each; `key` is a function or a property name. */
function uniqBy(items, key) {
  const keyFn = typeof key === "string" ? (item) => item[key] : key;
  const seen = new Set();
  const out = [];
  for (const item of items) {
    const k = keyFn(item);
    if (!seen.has(k)) {
      seen.add(k);
      out.push(item);
    }
  }
  return out;
}
