/**
 * The peak memory of a child process, as its own getrusage says: a module preloaded with `node --import PEAK_HOOK`
 * prints it on stderr at exit, whatever ends the process, and {@link peakRss} takes it out again.
 */

/** Preload for `node --import`: prints `peak-rss-kb N` on stderr at exit (N as getrusage's maxRSS, in kB). */
export const PEAK_HOOK = `data:text/javascript,${encodeURIComponent(
  "process.on('exit', () => process.getBuiltinModule('node:fs').writeSync(2, '\\npeak-rss-kb ' + process.resourceUsage().maxRSS + '\\n'));",
)}`;

/** The child's stderr without the hook's line, and its peak resident set in bytes (NaN when it did not print one). */
export function peakRss(stderr: string): { stderr: string; peakBytes: number } {
  const peak = /\npeak-rss-kb (\d+)\n/.exec(stderr);
  return {
    stderr: stderr.replace(/\npeak-rss-kb \d+\n/, ''),
    peakBytes: peak ? Number(peak[1]) * 1024 : Number.NaN,
  };
}
