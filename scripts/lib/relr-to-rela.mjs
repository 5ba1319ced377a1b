// Rewrites an x86-64 ELF shared library's RELR relocations (DT_RELR, packed relative
// relocations) as ordinary RELA ones, for dynamic loaders that predate RELR: musl before 1.2.4
// ignores DT_RELR, so a library linked with `-z pack-relative-relocs` loads with those pointers
// unrelocated and crashes in its constructors. Debian 12's musl is 1.2.3, and the musl build of
// Node the tests run the musl engine in (scripts/foreign-node.mjs) carries libstdc++ and
// libgcc_s linked that way.
//
// How: every address the RELR table covers becomes an R_X86_64_RELATIVE entry whose addend is
// the link-time value stored there (what RELR adds the load base to); the old RELA entries and
// the new ones are written to the end of the file, mapped by a PT_LOAD that replaces a PT_NOTE
// header (a loader ignores notes), and the dynamic section points DT_RELA there and loses its
// DT_RELR entries (so that a newer loader does not relocate the same words twice).
import fs from 'node:fs';

const PT_LOAD = 1;
const PT_DYNAMIC = 2;
const PT_NOTE = 4;
const PF_R = 4;
const DT_NULL = 0n;
const DT_RELA = 7n;
const DT_RELASZ = 8n;
const DT_RELRSZ = 35n;
const DT_RELR = 36n;
const DT_RELRENT = 37n;
const R_X86_64_RELATIVE = 8n;
const PAGE = 0x1000n;

const align = (value, to) => ((value + to - 1n) / to) * to;

/**
 * Rewrites `file` in place when it has RELR relocations.
 * @param {string} file an ELF64 little-endian x86-64 shared object
 * @returns {number} how many relocations were converted (0: nothing to do)
 */
export function relrToRela(file) {
  const elf = fs.readFileSync(file);
  if (elf.readUInt32BE(0) !== 0x7f454c46 || elf[4] !== 2 || elf[5] !== 1 || elf.readUInt16LE(18) !== 62) {
    throw new Error(`${file}: not an x86-64 ELF64 little-endian file`);
  }
  const phoff = Number(elf.readBigUInt64LE(32));
  const phentsize = elf.readUInt16LE(54);
  const phnum = elf.readUInt16LE(56);
  const headers = Array.from({ length: phnum }, (_, i) => {
    const at = phoff + i * phentsize;
    return {
      at,
      type: elf.readUInt32LE(at),
      offset: elf.readBigUInt64LE(at + 8),
      vaddr: elf.readBigUInt64LE(at + 16),
      filesz: elf.readBigUInt64LE(at + 32),
      memsz: elf.readBigUInt64LE(at + 40),
    };
  });
  const loads = headers.filter((h) => h.type === PT_LOAD);
  /** File offset of a virtual address. */
  const fileOffset = (vaddr) => {
    const load = loads.find((h) => vaddr >= h.vaddr && vaddr < h.vaddr + h.filesz);
    if (!load) throw new Error(`${file}: address 0x${vaddr.toString(16)} is not in the file`);
    return Number(vaddr - load.vaddr + load.offset);
  };

  const dynamic = headers.find((h) => h.type === PT_DYNAMIC);
  if (!dynamic) throw new Error(`${file}: no dynamic section`);
  const entries = [];
  for (let at = Number(dynamic.offset); ; at += 16) {
    const tag = elf.readBigInt64LE(at);
    entries.push({ tag, value: elf.readBigUInt64LE(at + 8) });
    if (tag === DT_NULL) break;
  }
  const value = (tag) => entries.find((e) => e.tag === tag)?.value;
  const relr = value(DT_RELR);
  if (relr === undefined) return 0;

  // Decode RELR: an even word is an address to relocate; an odd one is a bitmap of the 63
  // words after the last address (bit n+1 set: relocate word n).
  const addresses = [];
  const relrStart = fileOffset(relr);
  let next = 0n;
  for (let at = relrStart; at < relrStart + Number(value(DT_RELRSZ) ?? 0n); at += 8) {
    const word = elf.readBigUInt64LE(at);
    if ((word & 1n) === 0n) {
      addresses.push(word);
      next = word + 8n;
    } else {
      for (let bit = 0n; bit < 63n; bit += 1n) if ((word >> (bit + 1n)) & 1n) addresses.push(next + bit * 8n);
      next += 63n * 8n;
    }
  }

  const oldRela = value(DT_RELA);
  const oldSize = Number(value(DT_RELASZ) ?? 0n);
  const table = Buffer.alloc(oldSize + addresses.length * 24);
  if (oldRela !== undefined) elf.copy(table, 0, fileOffset(oldRela), fileOffset(oldRela) + oldSize);
  addresses.forEach((address, i) => {
    const at = oldSize + i * 24;
    table.writeBigUInt64LE(address, at);
    table.writeBigUInt64LE(R_X86_64_RELATIVE, at + 8);
    table.writeBigInt64LE(elf.readBigInt64LE(fileOffset(address)), at + 16);
  });

  const note = headers.find((h) => h.type === PT_NOTE);
  if (!note) throw new Error(`${file}: no PT_NOTE header to map the new relocation table with`);
  const offset = align(BigInt(elf.length), PAGE);
  // biome-ignore lint/complexity/useMathMinMax: addresses are bigints, which Math.max does not take
  const loadsEnd = loads.reduce((end, h) => (h.vaddr + h.memsz > end ? h.vaddr + h.memsz : end), 0n);
  const vaddr = align(loadsEnd, PAGE);
  const out = Buffer.alloc(Number(offset) + table.length);
  elf.copy(out);
  table.copy(out, Number(offset));
  out.writeUInt32LE(PT_LOAD, note.at);
  out.writeUInt32LE(PF_R, note.at + 4);
  out.writeBigUInt64LE(offset, note.at + 8);
  out.writeBigUInt64LE(vaddr, note.at + 16);
  out.writeBigUInt64LE(vaddr, note.at + 24);
  out.writeBigUInt64LE(BigInt(table.length), note.at + 32);
  out.writeBigUInt64LE(BigInt(table.length), note.at + 40);
  out.writeBigUInt64LE(PAGE, note.at + 48);

  const kept = entries
    .filter((e) => e.tag !== DT_RELR && e.tag !== DT_RELRSZ && e.tag !== DT_RELRENT)
    .map((e) => (e.tag === DT_RELA ? { ...e, value: vaddr } : e.tag === DT_RELASZ ? { ...e, value: BigInt(table.length) } : e));
  if (!kept.some((e) => e.tag === DT_RELA))
    kept.splice(kept.length - 1, 0, { tag: DT_RELA, value: vaddr }, { tag: DT_RELASZ, value: BigInt(table.length) });
  if (kept.length > entries.length) throw new Error(`${file}: no room in the dynamic section`);
  while (kept.length < entries.length) kept.push({ tag: DT_NULL, value: 0n });
  kept.forEach((e, i) => {
    out.writeBigInt64LE(e.tag, Number(dynamic.offset) + i * 16);
    out.writeBigUInt64LE(e.value, Number(dynamic.offset) + i * 16 + 8);
  });
  fs.writeFileSync(`${file}.tmp`, out, { mode: fs.statSync(file).mode });
  fs.renameSync(`${file}.tmp`, file);
  return addresses.length;
}
