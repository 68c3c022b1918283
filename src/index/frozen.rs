//! The frozen index's layout: every bucket of the posting families written
//! out whole at one moment, so a query reads a bucket in place (an offset
//! lookup and a slice) instead of through RocksDB. Pure: it writes to any
//! [`Write`] and reads a byte slice; the store maps the file and decides
//! which buckets it may answer (see `store::frozen`).
//!
//! ```text
//! offset          size           field (integers little-endian unless named)
//! 0               8              magic "simdbfz\n"
//! 8               4              layout version, u32 (2; 1 is read too)
//! 12              4              families, u32 (20: the block families, then the bands)
//! 16              8              generation, u64
//! then per family i, in order:
//!                 8 * n_i        its entries: 8-byte fingerprints, u64 big-endian
//!                                (a posting's entry encoding), bucket by bucket,
//!                                ascending within a bucket
//!                 8 * 65537      offsets, u64: bucket b holds entries
//!                                offsets[b] .. offsets[b + 1]; offsets[0] = 0,
//!                                offsets[65536] = n_i
//!                 4 * 65536      (layout 2) per bucket, the CRC-32 (crc32fast) of
//!                                its entries' bytes (0 for an empty bucket)
//! trailer:        16 * families  per family: the position of its entries, u64; n_i, u64
//!                 8              entries in all, u64
//!                 4              CRC-32 (crc32fast) of every byte before this field
//!                 4              end magic "fz\n\0"
//! ```
//!
//! Opening checks the header, the trailer and every offset table (cheap:
//! 10 MiB at most); the CRC covers the entries too and is checked by
//! `verify`, not at each open. A bucket's own CRC (layout 2) is checked
//! when it is first read ([`FrozenLayout::check_bucket`]): a damaged
//! bucket is then read from RocksDB, never answered from the file. Layout
//! 1 (no bucket CRCs) is read as before.

use std::io::Write;

use crate::fingerprint::Fingerprint;

use super::ENTRY_LEN;

/// The file's first 8 bytes.
pub const FROZEN_MAGIC: &[u8; 8] = b"simdbfz\n";
/// The file's last 4 bytes.
pub const FROZEN_END: &[u8; 4] = b"fz\n\0";
/// The layout version this build writes (it reads this one and 1).
pub const FROZEN_LAYOUT: u32 = 2;
/// The layout before bucket CRCs, still read.
pub const FROZEN_LAYOUT_1: u32 = 1;
/// Buckets per family (16-bit bucket keys).
pub const BUCKETS: usize = 1 << 16;
const HEADER_LEN: usize = 24;
const OFFSETS_LEN: usize = (BUCKETS + 1) * 8;
const CRCS_LEN: usize = BUCKETS * 4;

fn le64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

fn le32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

/// Checks the offset table at `offsets` of a family of `count` entries:
/// from 0, ascending, ending at `count`.
fn check_offsets(bytes: &[u8], offsets: usize, count: u64) -> Result<(), String> {
    let mut last = 0u64;
    for b in 0..=BUCKETS {
        let o = le64(bytes, offsets + 8 * b);
        if o < last || (b == 0 && o != 0) || o > count {
            return Err(format!("offset of bucket {b} is out of order"));
        }
        last = o;
    }
    if last != count {
        return Err(format!("offsets end at {last}, not {count}"));
    }
    Ok(())
}

/// Where each family's entries and offsets lie in a frozen index's bytes
/// (checked by [`FrozenLayout::parse`]).
#[derive(Debug, Clone)]
pub struct FrozenLayout {
    /// Per family: the position of its entries and of its offset table.
    families: Vec<(usize, usize)>,
    /// The layout version (1: no bucket CRCs, which follow each offset
    /// table in 2).
    pub layout: u32,
    pub generation: u64,
    pub entries: u64,
    /// The CRC-32 the trailer records.
    pub crc: u32,
}

impl FrozenLayout {
    /// Reads and checks the header, the trailer and every offset table of
    /// `bytes` (not the CRC: [`FrozenLayout::check_crc`]). `Err` carries
    /// the reason.
    pub fn parse(bytes: &[u8], families: usize) -> Result<FrozenLayout, String> {
        let trailer = 16 * families + 16;
        if bytes.len() < HEADER_LEN + trailer {
            return Err(format!(
                "{} bytes: shorter than a header and trailer",
                bytes.len()
            ));
        }
        if &bytes[..8] != FROZEN_MAGIC {
            return Err("no frozen index magic".into());
        }
        let layout = le32(bytes, 8);
        if layout != FROZEN_LAYOUT && layout != FROZEN_LAYOUT_1 {
            return Err(format!(
                "layout version {layout} (this build reads {FROZEN_LAYOUT_1} and {FROZEN_LAYOUT})"
            ));
        }
        let table_len = match layout {
            FROZEN_LAYOUT_1 => OFFSETS_LEN,
            _ => OFFSETS_LEN + CRCS_LEN,
        };
        let n = le32(bytes, 12) as usize;
        if n != families {
            return Err(format!("{n} families (expected {families})"));
        }
        let generation = le64(bytes, 16);
        let end = bytes.len();
        if &bytes[end - 4..] != FROZEN_END {
            return Err("no end magic: the file is truncated".into());
        }
        let crc = le32(bytes, end - 8);
        let entries = le64(bytes, end - 16);
        let dir = end - trailer;
        let mut at = HEADER_LEN;
        let mut total = 0u64;
        let mut out = Vec::with_capacity(families);
        for i in 0..families {
            let pos = le64(bytes, dir + 16 * i);
            let count = le64(bytes, dir + 16 * i + 8);
            let len = count
                .checked_mul(ENTRY_LEN as u64)
                .and_then(|l| usize::try_from(l).ok())
                .ok_or_else(|| format!("family {i}: {count} entries overflow"))?;
            if pos != at as u64 || at + len + table_len > dir {
                return Err(format!(
                    "family {i}: entries at {pos}, {count} of them, do not fit"
                ));
            }
            let offsets = at + len;
            check_offsets(bytes, offsets, count).map_err(|e| format!("family {i}: {e}"))?;
            total += count;
            out.push((at, offsets));
            at = offsets + table_len;
        }
        if at != dir {
            return Err(format!(
                "{} bytes between the last family and the trailer",
                dir - at
            ));
        }
        if total != entries {
            return Err(format!(
                "families hold {total} entries, the trailer says {entries}"
            ));
        }
        Ok(FrozenLayout {
            families: out,
            layout,
            generation,
            entries,
            crc,
        })
    }

    /// The entries of bucket `b` of family `i` in `bytes` (what
    /// [`FrozenLayout::parse`] accepted): whole 8-byte entries, ascending.
    #[inline]
    pub fn bucket<'a>(&self, bytes: &'a [u8], i: usize, b: u16) -> &'a [u8] {
        let (entries, offsets) = self.families[i];
        let at = offsets + 8 * usize::from(b);
        let (lo, hi) = (le64(bytes, at) as usize, le64(bytes, at + 8) as usize);
        &bytes[entries + lo * ENTRY_LEN..entries + hi * ENTRY_LEN]
    }

    /// Whether bucket `b` of family `i` in `bytes` has the CRC-32 its
    /// table records (layout 2; always true in layout 1, which has none).
    pub fn check_bucket(&self, bytes: &[u8], i: usize, b: u16) -> bool {
        if self.layout == FROZEN_LAYOUT_1 {
            return true;
        }
        let (_, offsets) = self.families[i];
        let want = le32(bytes, offsets + OFFSETS_LEN + 4 * usize::from(b));
        crc32fast::hash(self.bucket(bytes, i, b)) == want
    }

    /// Whether `bytes`'s CRC-32 is the one its trailer records.
    pub fn check_crc(&self, bytes: &[u8]) -> Result<(), String> {
        let got = crc32fast::hash(&bytes[..bytes.len() - 8]);
        if got == self.crc {
            Ok(())
        } else {
            Err(format!(
                "CRC-32 {got:08x}, the trailer says {:08x}: the file is damaged",
                self.crc
            ))
        }
    }
}

/// What [`FrozenWriter::finish`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrozenSummary {
    pub entries: u64,
    pub bytes: u64,
    pub crc: u32,
}

/// Writes a frozen index family by family, bucket by bucket, in one
/// sequential pass (memory: one offset table).
pub struct FrozenWriter<W: Write> {
    w: W,
    crc: crc32fast::Hasher,
    pos: u64,
    families: usize,
    dir: Vec<(u64, u64)>,
    /// The family being written: its offsets so far and the next bucket,
    /// and its buckets' CRCs.
    offsets: Vec<u64>,
    crcs: Vec<u32>,
    count: u64,
    start: u64,
    open: bool,
}

impl<W: Write> FrozenWriter<W> {
    /// Starts a frozen index of `families` families, generation `generation`.
    pub fn new(w: W, families: usize, generation: u64) -> std::io::Result<FrozenWriter<W>> {
        let mut f = FrozenWriter {
            w,
            crc: crc32fast::Hasher::new(),
            pos: 0,
            families,
            dir: Vec::with_capacity(families),
            offsets: Vec::with_capacity(BUCKETS + 1),
            crcs: Vec::with_capacity(BUCKETS),
            count: 0,
            start: 0,
            open: false,
        };
        let mut h = Vec::with_capacity(HEADER_LEN);
        h.extend_from_slice(FROZEN_MAGIC);
        h.extend_from_slice(&FROZEN_LAYOUT.to_le_bytes());
        h.extend_from_slice(&(families as u32).to_le_bytes());
        h.extend_from_slice(&generation.to_le_bytes());
        f.put(&h)?;
        Ok(f)
    }

    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.w.write_all(bytes)?;
        self.crc.update(bytes);
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// Starts the next family.
    pub fn begin_family(&mut self) {
        assert!(
            !self.open && self.dir.len() < self.families,
            "begin_family out of turn"
        );
        self.offsets.clear();
        self.offsets.push(0);
        self.crcs.clear();
        self.count = 0;
        self.start = self.pos;
        self.open = true;
    }

    /// Writes bucket `b` of the family being written: `fps` ascending,
    /// buckets in ascending order (those skipped are empty).
    pub fn bucket(&mut self, b: u16, fps: &[Fingerprint]) -> std::io::Result<()> {
        assert!(self.open, "bucket outside a family");
        let b = usize::from(b);
        assert!(b + 1 >= self.offsets.len(), "buckets out of order");
        while self.offsets.len() <= b {
            self.offsets.push(self.count);
            self.crcs.push(0);
        }
        let mut buf = Vec::with_capacity(fps.len() * ENTRY_LEN);
        for fp in fps {
            buf.extend_from_slice(&fp.value().to_be_bytes());
        }
        self.put(&buf)?;
        self.count += fps.len() as u64;
        self.offsets.push(self.count);
        self.crcs.push(crc32fast::hash(&buf));
        Ok(())
    }

    /// Ends the family being written (its remaining buckets are empty).
    pub fn end_family(&mut self) -> std::io::Result<()> {
        assert!(self.open, "end_family outside a family");
        while self.offsets.len() <= BUCKETS {
            self.offsets.push(self.count);
            self.crcs.push(0);
        }
        let mut buf = Vec::with_capacity(OFFSETS_LEN + CRCS_LEN);
        for o in &self.offsets {
            buf.extend_from_slice(&o.to_le_bytes());
        }
        for c in &self.crcs {
            buf.extend_from_slice(&c.to_le_bytes());
        }
        self.put(&buf)?;
        self.dir.push((self.start, self.count));
        self.open = false;
        Ok(())
    }

    /// Writes the trailer; returns the writer and what was written.
    pub fn finish(mut self) -> std::io::Result<(W, FrozenSummary)> {
        assert!(
            !self.open && self.dir.len() == self.families,
            "finish before every family"
        );
        let mut t = Vec::with_capacity(16 * self.families + 8);
        let mut entries = 0;
        for &(pos, count) in &self.dir {
            t.extend_from_slice(&pos.to_le_bytes());
            t.extend_from_slice(&count.to_le_bytes());
            entries += count;
        }
        t.extend_from_slice(&entries.to_le_bytes());
        self.put(&t)?;
        let crc = self.crc.clone().finalize();
        self.w.write_all(&crc.to_le_bytes())?;
        self.w.write_all(FROZEN_END)?;
        self.w.flush()?;
        let bytes = self.pos + 8;
        Ok((
            self.w,
            FrozenSummary {
                entries,
                bytes,
                crc,
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(families: &[Vec<(u16, Vec<u64>)>]) -> (Vec<u8>, FrozenSummary) {
        let mut w = FrozenWriter::new(Vec::new(), families.len(), 7).unwrap();
        for f in families {
            w.begin_family();
            for (b, fps) in f {
                let fps: Vec<Fingerprint> = fps.iter().map(|&v| Fingerprint(v)).collect();
                w.bucket(*b, &fps).unwrap();
            }
            w.end_family().unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn buckets_read_back_in_place() {
        let fams = vec![
            vec![
                (0, vec![1, 2]),
                (5, vec![0x0005_0000_0000_0001]),
                (65535, vec![u64::MAX]),
            ],
            vec![],
            vec![(7, vec![3, 4, 5])],
        ];
        let (bytes, s) = build(&fams);
        assert_eq!(s.entries, 7);
        assert_eq!(s.bytes as usize, bytes.len());
        let l = FrozenLayout::parse(&bytes, 3).unwrap();
        assert_eq!((l.generation, l.entries, l.crc), (7, 7, s.crc));
        l.check_crc(&bytes).unwrap();
        for (i, f) in fams.iter().enumerate() {
            for b in 0..=u16::MAX {
                let want: Vec<u8> = f
                    .iter()
                    .filter(|(x, _)| *x == b)
                    .flat_map(|(_, v)| v.iter().flat_map(|x| x.to_be_bytes()))
                    .collect();
                assert_eq!(l.bucket(&bytes, i, b), &want[..], "family {i} bucket {b}");
            }
        }
    }

    #[test]
    fn damage_is_found() {
        let (bytes, _) = build(&[vec![(3, vec![9, 10])]]);
        assert!(FrozenLayout::parse(&bytes, 2)
            .unwrap_err()
            .contains("families"));
        assert!(FrozenLayout::parse(&bytes[..bytes.len() - 1], 1)
            .unwrap_err()
            .contains("truncated"));
        let mut flipped = bytes.clone();
        flipped[HEADER_LEN] ^= 1;
        let l = FrozenLayout::parse(&flipped, 1).unwrap();
        assert!(l.check_crc(&flipped).unwrap_err().contains("damaged"));
        let mut bad = bytes.clone();
        // Bucket 5's offset below bucket 4's (2): out of order.
        let offsets = HEADER_LEN + 16;
        bad[offsets + 8 * 5..offsets + 8 * 6].copy_from_slice(&1u64.to_le_bytes());
        assert!(FrozenLayout::parse(&bad, 1)
            .unwrap_err()
            .contains("out of order"));
    }

    /// A flipped byte in a bucket's entries opens clean (the layout is
    /// whole) and is found by that bucket's CRC, and only by it.
    #[test]
    fn a_damaged_bucket_fails_its_own_crc() {
        let fams = vec![vec![(3, vec![9, 10]), (4, vec![11])], vec![(3, vec![12])]];
        let (bytes, _) = build(&fams);
        let l = FrozenLayout::parse(&bytes, 2).unwrap();
        assert_eq!(l.layout, FROZEN_LAYOUT);
        for i in 0..2 {
            for b in 0..=u16::MAX {
                assert!(l.check_bucket(&bytes, i, b), "family {i} bucket {b}");
            }
        }
        let mut flipped = bytes.clone();
        // The last byte of bucket 3's second entry (10) of family 0.
        flipped[HEADER_LEN + 15] ^= 0x40;
        let l = FrozenLayout::parse(&flipped, 2).unwrap();
        assert_eq!(l.bucket(&flipped, 0, 3)[15], 10 ^ 0x40);
        for i in 0..2 {
            for b in 0..=u16::MAX {
                assert_eq!(l.check_bucket(&flipped, i, b), (i, b) != (0, 3), "{i} {b}");
            }
        }
        assert!(l.check_crc(&flipped).is_err());
    }

    /// A frozen index of layout 1, written by a real build of that layout
    /// (tests/fixtures/frozen): read as before, every bucket taken as it
    /// is (no bucket CRCs to check).
    #[test]
    fn layout_1_written_by_an_old_build_is_read() {
        use std::io::Read;
        let gz = include_bytes!("../../tests/fixtures/frozen/frozen-v1.idx.gz");
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut bytes)
            .unwrap();
        let fps: Vec<u64> = include_str!("../../tests/fixtures/frozen/fps.jsonl")
            .lines()
            .map(|l| {
                let hex = l.split('"').nth(7).unwrap();
                u64::from_str_radix(hex, 16).unwrap()
            })
            .collect();
        assert_eq!(fps.len(), 300);
        let l = FrozenLayout::parse(&bytes, 20).unwrap();
        assert_eq!((l.layout, l.generation, l.entries), (1, 2, 1200));
        l.check_crc(&bytes).unwrap();
        for i in 0..20 {
            for b in 0..=u16::MAX {
                let mut want: Vec<u64> = match i {
                    0..4 => fps
                        .iter()
                        .copied()
                        .filter(|&fp| Fingerprint(fp).block(i) == b)
                        .collect(),
                    _ => Vec::new(),
                };
                want.sort_unstable();
                let want: Vec<u8> = want.iter().flat_map(|x| x.to_be_bytes()).collect();
                assert_eq!(l.bucket(&bytes, i, b), &want[..], "family {i} bucket {b}");
                assert!(l.check_bucket(&bytes, i, b));
            }
        }
    }
}
