/** Upper-case the first letter of every word and lower-case the rest; spacing is kept. */
function titleCase(text) {
  return text.replace(/[A-Za-z][^\s-]*/g, (w) => w[0].toUpperCase() + w.slice(1).toLowerCase());
}
