import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PersistentError } from './errors.ts';
import { kernelInstanceName, MAX_NAME_LENGTH, nameOfInstance, parseName } from './name.ts';
import { bufferPath } from './user.ts';

describe('buffer names', () => {
  it('namespaces map to nested files and to one tracefs instance', () => {
    expect(parseName('team/app/flight')).toEqual(['team', 'app', 'flight']);
    expect(bufferPath('team/app/flight', '/d')).toBe('/d/team/app/flight.evrb');
    expect(kernelInstanceName('team/app/flight')).toBe('evtrace.p.team:app:flight');
    expect(nameOfInstance('evtrace.p.team:app:flight')).toBe('team/app/flight');
    expect(nameOfInstance('evtrace-123-0')).toBeUndefined();
  });

  it.each([
    ['', /non-empty/],
    ['../etc/passwd', /column 1: \.\. would leave the namespace/],
    ['a/../../b', /column 3: \.\. would leave/],
    ['a//b', /column 3: empty segment/],
    ['/abs', /column 1: empty segment/],
    ['a/', /column 3: empty segment/],
    ['a/b c', /column 4: character " " is not allowed/],
    ['a/.hidden', /column 3: character "\." is not allowed/],
    ['-rf', /column 1: character "-" is not allowed/],
    ['a:b', /column 2: character ":" is not allowed/],
    ['a/b\0', /column 4: character "\\u0000" is not allowed/],
    ['x'.repeat(65), /segment is 65 characters/],
    ['a/'.repeat(9).slice(0, -1), /9 segments/],
    [`${'abcdefgh/'.repeat(25)}x`, new RegExp(`limit is ${MAX_NAME_LENGTH}`)],
  ])('refuses %j', (name, message) => {
    expect(() => parseName(name)).toThrow(expect.objectContaining({ code: 'ERR_PERSISTENT_NAME' }));
    expect(() => parseName(name)).toThrow(message);
  });

  it('fuzz: every accepted name stays inside the directory, and round-trips through its instance name', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 250 }), fc.stringMatching(/^[a-z.\-_/:\\\0 ]{0,40}$/)), (name) => {
        let segments: string[];
        try {
          segments = parseName(name);
        } catch (error) {
          expect(error).toBeInstanceOf(PersistentError);
          expect((error as PersistentError).code).toBe('ERR_PERSISTENT_NAME');
          return;
        }
        const path = bufferPath(name, '/base');
        expect(path.startsWith('/base/')).toBe(true);
        expect(path).toBe(`/base/${segments.join('/')}.evrb`);
        expect(segments.every((s) => s !== '.' && s !== '..' && !s.includes('\0'))).toBe(true);
        expect(name.length).toBeLessThanOrEqual(MAX_NAME_LENGTH);
        expect(nameOfInstance(kernelInstanceName(name))).toBe(name);
        expect(kernelInstanceName(name)).not.toMatch(/^evtrace-\d+-\d+$/);
      }),
      { numRuns: 3000 },
    );
  });
});
