// Preloaded with --import into a benchmarked process: on exit, appends the
// process's peak resident set size (KiB, as getrusage reports it) to the
// file named by BENCH_RSS_FILE, and the CPU time it has used (user + system,
// all threads, in microseconds) to the one named by BENCH_CPU_FILE, if set.
import { appendFileSync } from 'node:fs';

process.on('exit', () => {
  const usage = process.resourceUsage();
  const file = process.env.BENCH_RSS_FILE;
  if (file) appendFileSync(file, `${usage.maxRSS}\n`);
  const cpuFile = process.env.BENCH_CPU_FILE;
  if (cpuFile) appendFileSync(cpuFile, `${usage.userCPUTime + usage.systemCPUTime}\n`);
});
