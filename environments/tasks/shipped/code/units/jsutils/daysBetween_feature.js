/** Whole days from `start` to `end`, both "YYYY-MM-DD" (UTC calendar days; negative if end is earlier).
 * With `options.inclusive`, both ends count (one more day in the direction of travel). */
function daysBetween(start, end, options = {}) {
  const toUtc = (s) => {
    const [y, m, d] = s.split("-").map(Number);
    return Date.UTC(y, m - 1, d);
  };
  const days = Math.round((toUtc(end) - toUtc(start)) / 86400000);
  if (!options.inclusive) return days;
  return days >= 0 ? days + 1 : days - 1;
}
