import { runCtfBenchmarks } from './ctf.bench.ts';

runCtfBenchmarks();
