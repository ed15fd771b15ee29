import { runCtfBenchmarks } from './ctf.bench.ts';
import { runFtraceBenchmarks } from './ftrace.bench.ts';

runCtfBenchmarks();
runFtraceBenchmarks();
