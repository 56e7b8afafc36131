/** Whole days from `start` to `end`, both "YYYY-MM-DD" (UTC calendar days; negative if end is earlier). */
function daysBetween(start, end) {
  const toUtc = (s) => {
    const [y, m, d] = s.split("-").map(Number);
    return Date.UTC(y, m - 1, d);
  };
  return Math.round((toUtc(end) - toUtc(start)) / 86400000);
}
