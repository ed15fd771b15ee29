import { TraceFormatError } from '../errors.ts';

/** Magic of a CTF 1.8 metadata packet (TSDL split in packets, as LTTng writes it). */
export const METADATA_PACKET_MAGIC = 0x75d11d57;
/** Size of the metadata packet header: magic, uuid, checksum, content and packet sizes, 5 one-byte fields. */
const HEADER_BYTES = 37;

/** The TSDL text of a metadata file, and the UUID its packets carry when it is packetized. */
export interface MetadataText {
  readonly text: string;
  readonly packetized: boolean;
  readonly uuid?: string;
}

function uuidString(bytes: Uint8Array): string {
  const hex = Buffer.from(bytes).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Extracts TSDL from a metadata file: plain text as is, or the concatenated payloads of metadata packets (either byte
 * order). Every packet is checked: sizes within the file, no compression, encryption or checksum, version 1.8.
 */
export function readMetadataText(data: Uint8Array, file?: string): MetadataText {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const first = data.length >= 4 ? view.getUint32(0, true) : 0;
  const le = first === METADATA_PACKET_MAGIC;
  const be = data.length >= 4 && view.getUint32(0, false) === METADATA_PACKET_MAGIC;
  if (!le && !be) {
    if (data.length > 0 && data[0] === 0x1e) {
      throw new TraceFormatError('ERR_TRACE_TSDL', 'CTF 2 (JSON) metadata is not supported', { file, offset: 0 });
    }
    const nul = data.indexOf(0);
    const text = Buffer.from(nul < 0 ? data : data.subarray(0, nul)).toString('utf8');
    return { text, packetized: false };
  }
  const parts: string[] = [];
  let uuid: string | undefined;
  let offset = 0;
  while (offset < data.length) {
    const fail = (message: string): never => {
      throw new TraceFormatError('ERR_TRACE_TSDL', `metadata packet: ${message}`, { file, offset });
    };
    if (data.length - offset < HEADER_BYTES) fail('truncated header');
    if (view.getUint32(offset, le) !== METADATA_PACKET_MAGIC) fail('bad magic');
    const packetUuid = uuidString(data.subarray(offset + 4, offset + 20));
    if (uuid !== undefined && uuid !== packetUuid) fail(`UUID ${packetUuid} differs from the first packet's ${uuid}`);
    uuid = packetUuid;
    const contentBits = view.getUint32(offset + 24, le);
    const packetBits = view.getUint32(offset + 28, le);
    const [compression, encryption, checksum, major, minor] = data.subarray(offset + 32, offset + 37);
    if (compression !== 0 || encryption !== 0 || checksum !== 0) fail('compressed, encrypted or checksummed');
    if (major !== 1 || minor !== 8) {
      // Pre-1.8 LTTng headers had no version bytes: the text starts where they would be.
      const text = major! >= 0x20 && minor! >= 0x20 ? ' (text where the version belongs: a pre-1.8 header?)' : '';
      fail(`version ${major}.${minor}, expected 1.8${text}`);
    }
    if (contentBits % 8 !== 0 || packetBits % 8 !== 0) fail('sizes are not whole bytes');
    if (contentBits < HEADER_BYTES * 8 || packetBits < contentBits) {
      fail(`content size ${contentBits} or packet size ${packetBits} bits is impossible`);
    }
    if (offset + packetBits / 8 > data.length) fail(`packet of ${packetBits / 8} bytes runs past the end of the file`);
    parts.push(Buffer.from(data.subarray(offset + HEADER_BYTES, offset + contentBits / 8)).toString('utf8'));
    offset += packetBits / 8;
  }
  return { text: parts.join(''), packetized: true, uuid };
}
