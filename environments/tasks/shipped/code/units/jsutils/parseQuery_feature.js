/** Parse "a=1&b=x+y&a=2": '+' is a space, values are URI-decoded, repeated keys collect into arrays.
 * With `options.numbers`, values that are plain decimal numbers become numbers. */
function parseQuery(query, options = {}) {
  const out = {};
  for (const part of query.replace(/^\?/, "").split("&")) {
    if (!part) continue;
    const [rawKey, rawValue = ""] = part.split("=");
    const key = decodeURIComponent(rawKey.replace(/\+/g, " "));
    let value = decodeURIComponent(rawValue.replace(/\+/g, " "));
    if (options.numbers && /^-?\d+(\.\d+)?$/.test(value)) value = Number(value);
    if (key in out) out[key] = [].concat(out[key], value);
    else out[key] = value;
  }
  return out;
}
