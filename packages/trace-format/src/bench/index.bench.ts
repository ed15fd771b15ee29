console.log('trace-format benchmarks: none yet');
