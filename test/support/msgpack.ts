/**
 * A minimal MessagePack reader for tests: enough to look inside a `.wkl` the way pg-retest's
 * rmp-serde does (arrays, maps, strings, integers, floats, nil, booleans), independently of the
 * engine's own decoder.
 */
export type MsgValue = null | boolean | number | string | MsgValue[] | { [key: string]: MsgValue };

/**
 * Decodes one MessagePack value that must fill the whole buffer.
 * @param bytes the file
 * @returns the value
 */
export function decodeMsgpack(bytes: Uint8Array): MsgValue {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const text = new TextDecoder('utf-8', { fatal: true });
  const str = (n: number): string => {
    const s = text.decode(bytes.subarray(at, at + n));
    at += n;
    return s;
  };
  const array = (n: number): MsgValue[] => Array.from({ length: n }, () => next());
  const map = (n: number): Record<string, MsgValue> => {
    const out: Record<string, MsgValue> = {};
    for (let i = 0; i < n; i++) out[String(next())] = next();
    return out;
  };
  const u = (size: 1 | 2 | 4 | 8): number => {
    const v =
      size === 1 ? view.getUint8(at) : size === 2 ? view.getUint16(at) : size === 4 ? view.getUint32(at) : Number(view.getBigUint64(at));
    at += size;
    return v;
  };
  const i = (size: 1 | 2 | 4 | 8): number => {
    const v =
      size === 1 ? view.getInt8(at) : size === 2 ? view.getInt16(at) : size === 4 ? view.getInt32(at) : Number(view.getBigInt64(at));
    at += size;
    return v;
  };
  function next(): MsgValue {
    const b = bytes[at++]!;
    if (b <= 0x7f) return b;
    if (b >= 0xe0) return b - 0x100;
    if ((b & 0xf0) === 0x80) return map(b & 0x0f);
    if ((b & 0xf0) === 0x90) return array(b & 0x0f);
    if ((b & 0xe0) === 0xa0) return str(b & 0x1f);
    switch (b) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xca: {
        const v = view.getFloat32(at);
        at += 4;
        return v;
      }
      case 0xcb: {
        const v = view.getFloat64(at);
        at += 8;
        return v;
      }
      case 0xcc:
        return u(1);
      case 0xcd:
        return u(2);
      case 0xce:
        return u(4);
      case 0xcf:
        return u(8);
      case 0xd0:
        return i(1);
      case 0xd1:
        return i(2);
      case 0xd2:
        return i(4);
      case 0xd3:
        return i(8);
      case 0xd9:
        return str(u(1));
      case 0xda:
        return str(u(2));
      case 0xdb:
        return str(u(4));
      case 0xdc:
        return array(u(2));
      case 0xdd:
        return array(u(4));
      case 0xde:
        return map(u(2));
      case 0xdf:
        return map(u(4));
      default:
        throw new Error(`msgpack: unsupported type byte 0x${b.toString(16)} at ${at - 1}`);
    }
  }
  const value = next();
  if (at !== bytes.length) throw new Error(`msgpack: ${bytes.length - at} bytes after the value`);
  return value;
}

/** A captured statement, positionally as pg-retest writes it. */
export interface WklQuery {
  sql: string;
  start_offset_us: number;
  duration_us: number;
  kind: string;
  transaction_id: number | null;
  /** Rows the capture saw returned: `[[[column, value], …]]` per row (recorded or inferred keys). */
  response_values: [string, string][][] | null;
}

/**
 * The sessions of a `.wkl` profile in array form (what pg-retest and our capture write).
 * @param bytes the file
 * @returns sessions with their queries; throws if the shape is not pg-retest's
 */
export function wklSessions(bytes: Uint8Array): { id: number; user: string; database: string; queries: WklQuery[] }[] {
  const top = decodeMsgpack(bytes);
  if (!Array.isArray(top) || top.length !== 7) throw new Error('not a 7-element profile array');
  const sessions = top[5] as MsgValue[][];
  return sessions.map((s) => {
    if (s.length !== 4) throw new Error('a session is not a 4-element array');
    const queries = (s[3] as MsgValue[][]).map((q) => {
      if (q.length > 6) throw new Error('a query has more than 6 elements: pg-retest would refuse it');
      const rows = (q[5] ?? null) as MsgValue[][] | null;
      return {
        sql: q[0] as string,
        start_offset_us: q[1] as number,
        duration_us: q[2] as number,
        kind: q[3] as string,
        transaction_id: (q[4] ?? null) as number | null,
        response_values:
          rows?.map((row) => (row[0] as MsgValue[][]).map((c) => [c[0] as string, c[1] as string] as [string, string])) ?? null,
      };
    });
    return { id: s[0] as number, user: s[1] as string, database: s[2] as string, queries };
  });
}
