/** Split `items` into arrays of `size`; with `options.pad` the last one is filled up with that value. */
function chunk(items, size, options = {}) {
  if (!Number.isInteger(size) || size < 1) throw new RangeError("size must be a positive integer");
  const out = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  const last = out[out.length - 1];
  if ("pad" in options && last) while (last.length < size) last.push(options.pad);
  return out;
}
