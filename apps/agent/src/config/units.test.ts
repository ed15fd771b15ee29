import { describe, expect, it } from 'vitest';
import { formatListenAddress, parseListenAddress } from './units.ts';

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
