import { describe, expect, it } from 'vitest';
import { formatListenAddress, parseDuration, parseListenAddress, parseSize } from './units.ts';

describe('sizes', () => {
  it('reads binary and decimal units and bare bytes', () => {
    expect(parseSize('64MiB')).toBe(64 * 1024 * 1024);
    expect(parseSize('64M')).toBe(64 * 1024 * 1024);
    expect(parseSize('10MB')).toBe(10_000_000);
    expect(parseSize('512 KiB')).toBe(512 * 1024);
    expect(parseSize('1.5GiB')).toBe(1.5 * 1024 ** 3);
    expect(parseSize('4096')).toBe(4096);
    expect(parseSize('4096B')).toBe(4096);
  });
  it('refuses what is not a size', () => {
    for (const t of ['', 'MiB', '64Mb', '64mib', '-1M', '1e3', '64 MiBs', '0.5B', '99999999999T', '1,024']) {
      expect(parseSize(t), t).toBeUndefined();
    }
  });
});

describe('durations', () => {
  it('reads ms, s, m, h and d', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('30s')).toBe(30_000);
    expect(parseDuration('10m')).toBe(600_000);
    expect(parseDuration('1.5h')).toBe(5_400_000);
    expect(parseDuration('1d')).toBe(86_400_000);
  });
  it('refuses bare numbers, zero and unknown units', () => {
    for (const t of ['30', '0s', '1w', 's', '1 hour', '-5s']) expect(parseDuration(t), t).toBeUndefined();
  });
});

describe('listen addresses', () => {
  it('reads IPv4, IPv6 in brackets, host names and :PORT', () => {
    expect(parseListenAddress('127.0.0.1:9464')).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(parseListenAddress('[::1]:9464')).toEqual({ host: '::1', port: 9464 });
    expect(parseListenAddress('localhost:0')).toEqual({ host: 'localhost', port: 0 });
    expect(parseListenAddress(':9464')).toEqual({ host: '0.0.0.0', port: 9464 });
    expect(parseListenAddress('off')).toBeNull();
  });
  it('refuses addresses without a port, bad ports and bad host names', () => {
    for (const t of ['127.0.0.1', '9464', '127.0.0.1:65536', '::1:9464', 'a b:1', '-x:1', 'host:port', '[::1]']) {
      expect(parseListenAddress(t), t).toBeUndefined();
    }
  });
  it('writes IPv6 hosts in brackets', () => {
    expect(formatListenAddress({ host: '::1', port: 1 })).toBe('[::1]:1');
    expect(formatListenAddress({ host: '10.0.0.1', port: 2 })).toBe('10.0.0.1:2');
  });
});
