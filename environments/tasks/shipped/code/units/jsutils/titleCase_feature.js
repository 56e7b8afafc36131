/** Upper-case the first letter of every word and lower-case the rest; `small` words stay lower case
 * unless they come first. */
function titleCase(text, small = []) {
  const keep = new Set(small.map((w) => w.toLowerCase()));
  let first = true;
  return text.replace(/[A-Za-z][^\s-]*/g, (w) => {
    const lower = w.toLowerCase();
    const out = !first && keep.has(lower) ? lower : w[0].toUpperCase() + w.slice(1).toLowerCase();
    first = false;
    return out;
  });
}
