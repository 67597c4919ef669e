// Min, median (the upper one of an even count) and max of a benchmark's per-round figures.
export const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0], median: s[Math.floor(s.length / 2)], max: s.at(-1) };
};
