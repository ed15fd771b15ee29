/** The bytes every trace.dat starts with. */
export const TRACEDAT_MAGIC = Buffer.from([0x17, 0x08, 0x44, ...Buffer.from('tracing')]);

/** Option and section ids of trace.dat (trace-cmd.dat.v7(5)); v7 sections share their option's id. */
export const OPTION = {
  done: 0,
  date: 1,
  cpuStat: 2,
  buffer: 3,
  traceClock: 4,
  uname: 5,
  hook: 6,
  offset: 7,
  cpuCount: 8,
  version: 9,
  procMaps: 10,
  traceId: 11,
  timeShift: 12,
  guest: 13,
  tsc2nsec: 14,
  strings: 15,
  headerInfo: 16,
  ftraceEvents: 17,
  eventFormats: 18,
  kallsyms: 19,
  printk: 20,
  cmdlines: 21,
  bufferText: 22,
} as const;

/** Section flag: the section's content is compressed. */
export const SECTION_COMPRESSED = 1;

/** The description a version 7 file gives each metadata section, by section id. */
export const SECTION_NAMES: Readonly<Record<number, string>> = {
  [OPTION.headerInfo]: 'headers',
  [OPTION.ftraceEvents]: 'ftrace events',
  [OPTION.eventFormats]: 'events format',
  [OPTION.kallsyms]: 'kallsyms',
  [OPTION.printk]: 'printk',
  [OPTION.cmdlines]: 'command lines',
};
