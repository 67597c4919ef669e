// The benchmarks' command-line options: `--name value`, as a string, or the default when absent.
export const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
