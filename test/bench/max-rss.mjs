// Preloaded with --import into a benchmarked process: on exit, appends the
// process's peak resident set size (KiB, as getrusage reports it) to the
// file named by BENCH_RSS_FILE.
import { appendFileSync } from 'node:fs';

process.on('exit', () => {
  const file = process.env.BENCH_RSS_FILE;
  if (file) appendFileSync(file, `${process.resourceUsage().maxRSS}\n`);
});
