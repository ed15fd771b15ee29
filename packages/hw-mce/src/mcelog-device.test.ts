import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MceError } from './errors.ts';
import { encodeStructMce } from './inputs/struct-mce.ts';
import { ior, MCE_IOCTL, MCELOG_DEVICE, readMcelogDevice } from './mcelog-device.ts';
import { readMceFile } from './read.ts';
import { emptyRecord } from './record.ts';

const dir = mkdtempSync(join(tmpdir(), 'hw-mce-device-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HEADER = '/usr/include/x86_64-linux-gnu/asm/mce.h';
const gcc = spawnSync('gcc', ['--version']).status === 0;
const headerWhy = !gcc
  ? 'gcc is not installed (apt-get install gcc)'
  : !existsSync(HEADER)
    ? `${HEADER} is missing (linux-libc-dev)`
    : '';

describe('ioctl numbers', () => {
  it('_IOR packs direction, size, type and number as asm-generic/ioctl.h does', () => {
    expect(ior('M', 1, 4)).toBe(0x80044d01);
    expect(ior('T', 0x19, 8)).toBe(0x80085419);
  });

  it.skipIf(headerWhy !== '')(
    `equal the kernel header's MCE_GET_RECORD_LEN, MCE_GET_LOG_LEN, MCE_GETCLEAR_FLAGS, compiled by gcc${headerWhy ? ` (skipped: ${headerWhy})` : ''}`,
    () => {
      const src = join(dir, 'ioctls.c');
      writeFileSync(
        src,
        '#include <stdio.h>\n#include <sys/ioctl.h>\n#include <asm/mce.h>\nint main(void) { printf("%lu %lu %lu\\n", ' +
          '(unsigned long)MCE_GET_RECORD_LEN, (unsigned long)MCE_GET_LOG_LEN, (unsigned long)MCE_GETCLEAR_FLAGS); return 0; }\n',
      );
      execFileSync('gcc', ['-o', join(dir, 'ioctls'), src]);
      const printed = execFileSync(join(dir, 'ioctls'), { encoding: 'utf8' }).trim().split(' ').map(Number);
      expect(printed).toEqual([MCE_IOCTL.getRecordLen, MCE_IOCTL.getLogLen, MCE_IOCTL.getClearFlags]);
    },
  );
});

describe('/dev/mcelog (this VM has no machine-check support and no /dev/mcelog)', () => {
  it.skipIf(existsSync(MCELOG_DEVICE))('says clearly that the device is absent and what to read instead', () => {
    let error: unknown;
    try {
      readMcelogDevice();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(MceError);
    expect((error as MceError).code).toBe('ERR_MCE_SOURCE');
    expect((error as MceError).message).toMatch(
      /^\/dev\/mcelog: no mcelog device: this kernel has no CONFIG_X86_MCELOG_LEGACY.*mce:mce_record/,
    );
  });

  it('asks the device its record length through the real ioctl: a file of records is refused (ENOTTY), not guessed', () => {
    const file = join(dir, 'records');
    writeFileSync(
      file,
      encodeStructMce([Object.assign(emptyRecord({ kind: 'struct-mce' }), { status: 0x9c00000000000090n, bank: 7 })]),
    );
    expect(() => readMcelogDevice({ path: file })).toThrow(
      new RegExp(`^${file}: ioctl MCE_GET_RECORD_LEN failed: ENOTTY \\(not an mcelog device\\)$`),
    );
  });

  it('a character device that is not mcelog is refused by its ioctl too', () => {
    expect(() => readMcelogDevice({ path: '/dev/null' })).toThrow(
      /\/dev\/null: ioctl MCE_GET_RECORD_LEN failed: ENOTTY/,
    );
  });

  it('readMceFile reads a character device as the device, not as a file of records', () => {
    expect(() => readMceFile('/dev/null')).toThrow(/^\/dev\/null: ioctl MCE_GET_RECORD_LEN failed: ENOTTY/);
    if (!existsSync(MCELOG_DEVICE)) expect(() => readMceFile(MCELOG_DEVICE)).toThrow(/no mcelog device/);
  });
});
