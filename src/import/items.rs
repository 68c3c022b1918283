//! The records of the import's external sorts: by id, by fingerprint, by ingest order, by cluster.

use super::*;

// --- sort items -----------------------------------------------------------

/// Step 1: (id, position) order, with where it came from.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct ById {
    pub(super) id: String,
    pub(super) pos: u64,
    pub(super) fp: u64,
    pub(super) input: u32,
    pub(super) line: u64,
    /// The sketch of the sketched binary form (a restored record's is in
    /// `extra`).
    pub(super) sketch: Option<[u8; SKETCH_BYTES]>,
    /// A restored record ([`Restored::encode`]), or empty.
    pub(super) extra: Vec<u8>,
    /// An engine's analysis of the text (Parquet input).
    pub(super) analysed: Option<Analysed>,
    /// An engine row's priority and time.
    pub(super) stated: Stated,
}

impl Item for ById {
    fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        write_str(w, &self.id)?;
        w.write_all(&self.pos.to_be_bytes())?;
        w.write_all(&self.fp.to_be_bytes())?;
        w.write_all(&self.input.to_be_bytes())?;
        w.write_all(&self.line.to_be_bytes())?;
        match &self.sketch {
            Some(s) => {
                w.write_all(&[1])?;
                w.write_all(s)?;
            }
            None => w.write_all(&[0])?,
        }
        w.write_all(&(self.extra.len() as u32).to_be_bytes())?;
        w.write_all(&self.extra)?;
        match &self.analysed {
            Some(a) => {
                w.write_all(&[1
                    | u8::from(a.content_hash.is_some()) << 1
                    | u8::from(a.fine.is_some()) << 2])?;
                w.write_all(&a.length.to_be_bytes())?;
                w.write_all(&a.terms.to_be_bytes())?;
                w.write_all(&a.content_hash.unwrap_or(0).to_be_bytes())?;
                w.write_all(&(a.weak_bits.len() as u32).to_be_bytes())?;
                w.write_all(&a.weak_bits)?;
                write_parts(w, &a.parts)?;
                match &a.fine {
                    Some(f) => w.write_all(&f.0),
                    None => Ok(()),
                }
            }
            None => w.write_all(&[0]),
        }?;
        let Stated { priority, dated } = self.stated;
        w.write_all(&[u8::from(priority.is_some()) | u8::from(dated.is_some()) << 1])?;
        if let Some(p) = priority {
            w.write_all(&p.value().to_bits().to_be_bytes())?;
        }
        if let Some(t) = dated {
            w.write_all(&t.to_be_bytes())?;
        }
        Ok(())
    }
    fn read_from(r: &mut impl BufRead) -> io::Result<Option<Self>> {
        if r.fill_buf()?.is_empty() {
            return Ok(None);
        }
        let id = read_str(r)?;
        let mut b = [0u8; 28];
        r.read_exact(&mut b)?;
        let u64_at = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        let mut flag = [0u8; 1];
        r.read_exact(&mut flag)?;
        let sketch = if flag[0] == 1 {
            let mut s = [0u8; SKETCH_BYTES];
            r.read_exact(&mut s)?;
            Some(s)
        } else {
            None
        };
        let mut n = [0u8; 4];
        r.read_exact(&mut n)?;
        let mut extra = vec![0u8; u32::from_be_bytes(n) as usize];
        r.read_exact(&mut extra)?;
        r.read_exact(&mut flag)?;
        let analysed = if flag[0] & 1 == 1 {
            let mut a = [0u8; 24];
            r.read_exact(&mut a)?;
            let mut weak = vec![0u8; u32::from_be_bytes([a[20], a[21], a[22], a[23]]) as usize];
            r.read_exact(&mut weak)?;
            let parts = read_parts(r)?;
            let fine = if flag[0] & 4 == 4 {
                let mut f = [0u8; crate::fingerprint::fine::FINE_BYTES];
                r.read_exact(&mut f)?;
                Some(crate::fingerprint::FineSketch(f))
            } else {
                None
            };
            let mut h = [0u8; 8];
            h.copy_from_slice(&a[12..20]);
            let mut l = [0u8; 8];
            l.copy_from_slice(&a[..8]);
            Some(Analysed {
                length: u64::from_be_bytes(l),
                terms: u32::from_be_bytes([a[8], a[9], a[10], a[11]]),
                content_hash: (flag[0] & 2 == 2).then(|| u64::from_be_bytes(h)),
                weak_bits: weak,
                parts,
                fine,
            })
        } else {
            None
        };
        r.read_exact(&mut flag)?;
        let mut word = || -> io::Result<u64> {
            let mut w = [0u8; 8];
            r.read_exact(&mut w)?;
            Ok(u64::from_be_bytes(w))
        };
        let priority = match flag[0] & 1 == 1 {
            true => store::codec::Priority::new(f64::from_bits(word()?)),
            false => None,
        };
        let dated = match flag[0] & 2 == 2 {
            true => Some(word()?),
            false => None,
        };
        Ok(Some(ById {
            id,
            pos: u64_at(0),
            fp: u64_at(8),
            input: u32::from_be_bytes(b[16..20].try_into().unwrap_or([0; 4])),
            line: u64_at(20),
            sketch,
            extra,
            analysed,
            stated: Stated { priority, dated },
        }))
    }
    fn mem_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.id.capacity() + self.extra.capacity()
    }
}

/// Step 2: (fingerprint, id) order.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct ByFp {
    pub(super) fp: u64,
    pub(super) id: String,
    /// The restored record's sketch and parts (the `refs` value).
    pub(super) sketch: Option<[u8; crate::fingerprint::SKETCH_BYTES]>,
    pub(super) parts: Vec<u64>,
}

impl ByFp {
    /// Its `refs` value: the sketch, and the parts beside it.
    pub(super) fn refs_value(&self) -> crate::store::schema::RefValue {
        crate::store::schema::RefValue {
            sketch: self.sketch.map(crate::fingerprint::Sketch),
            parts: match self.sketch {
                Some(_) => crate::store::schema::Parts::new(&self.parts),
                None => crate::store::schema::Parts::default(),
            },
        }
    }
}

impl Item for ByFp {
    fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        w.write_all(&self.fp.to_be_bytes())?;
        write_str(w, &self.id)?;
        match &self.sketch {
            Some(s) => {
                w.write_all(&[1])?;
                w.write_all(s)
            }
            None => w.write_all(&[0]),
        }?;
        write_parts(w, &self.parts)
    }
    fn read_from(r: &mut impl BufRead) -> io::Result<Option<Self>> {
        let Some(fp) = read_array::<8>(r)? else {
            return Ok(None);
        };
        let id = read_str(r)?;
        let mut flag = [0u8; 1];
        r.read_exact(&mut flag)?;
        let sketch = match flag[0] {
            0 => None,
            _ => {
                let mut s = [0u8; crate::fingerprint::SKETCH_BYTES];
                r.read_exact(&mut s)?;
                Some(s)
            }
        };
        let parts = read_parts(r)?;
        Ok(Some(ByFp {
            fp: u64::from_be_bytes(fp),
            id,
            sketch,
            parts,
        }))
    }
    fn mem_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.id.capacity() + 8 * self.parts.capacity()
    }
}

/// Step 4: the ingest order index, in ord order.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct ByOrd {
    pub(super) ord: u64,
    pub(super) id: String,
}

impl Item for ByOrd {
    fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        w.write_all(&self.ord.to_be_bytes())?;
        write_str(w, &self.id)
    }
    fn read_from(r: &mut impl BufRead) -> io::Result<Option<Self>> {
        let Some(ord) = read_array::<8>(r)? else {
            return Ok(None);
        };
        let id = read_str(r)?;
        Ok(Some(ByOrd {
            ord: u64::from_be_bytes(ord),
            id,
        }))
    }
    fn mem_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.id.capacity()
    }
}

/// Restore: a member of a restored cluster, in (cluster, rank) order.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct ByCluster {
    pub(super) cid: u64,
    pub(super) rank: [u8; 16],
    pub(super) id: String,
}

impl Item for ByCluster {
    fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        w.write_all(&self.cid.to_be_bytes())?;
        w.write_all(&self.rank)?;
        write_str(w, &self.id)
    }
    fn read_from(r: &mut impl BufRead) -> io::Result<Option<Self>> {
        let Some(cid) = read_array::<8>(r)? else {
            return Ok(None);
        };
        let mut rank = [0u8; 16];
        r.read_exact(&mut rank)?;
        Ok(Some(ByCluster {
            cid: u64::from_be_bytes(cid),
            rank,
            id: read_str(r)?,
        }))
    }
    fn mem_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.id.capacity()
    }
}

/// Restore: the time index of the documents with their own time, in
/// (time, ord) order.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct ByTime {
    pub(super) time: u64,
    pub(super) ord: u64,
    pub(super) id: String,
}

impl Item for ByTime {
    fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        w.write_all(&self.time.to_be_bytes())?;
        w.write_all(&self.ord.to_be_bytes())?;
        write_str(w, &self.id)
    }
    fn read_from(r: &mut impl BufRead) -> io::Result<Option<Self>> {
        let Some(time) = read_array::<8>(r)? else {
            return Ok(None);
        };
        let mut ord = [0u8; 8];
        r.read_exact(&mut ord)?;
        Ok(Some(ByTime {
            time: u64::from_be_bytes(time),
            ord: u64::from_be_bytes(ord),
            id: read_str(r)?,
        }))
    }
    fn mem_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.id.capacity()
    }
}

/// Restore: a clustered document's `d` entry, in id order.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Membership {
    pub(super) id: String,
    pub(super) cid: u64,
}

impl Item for Membership {
    fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        write_str(w, &self.id)?;
        w.write_all(&self.cid.to_be_bytes())
    }
    fn read_from(r: &mut impl BufRead) -> io::Result<Option<Self>> {
        if r.fill_buf()?.is_empty() {
            return Ok(None);
        }
        let id = read_str(r)?;
        let mut cid = [0u8; 8];
        r.read_exact(&mut cid)?;
        Ok(Some(Membership {
            id,
            cid: u64::from_be_bytes(cid),
        }))
    }
    fn mem_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.id.capacity()
    }
}

/// A record restored from an export, and the id of its cluster (its own
/// ord when it is alone).
pub(super) struct Restored {
    pub(super) rec: Record,
    pub(super) cluster: u64,
    /// Its kept text (an export of a store that keeps texts).
    pub(super) text: Option<String>,
}

impl Restored {
    /// The sketch (a flag byte, then its bytes when the flag is 1) ‖ the
    /// parts ([`write_parts`]) ‖ the text (a flag byte, then when it is 1
    /// its length, u32 BE, and bytes) ‖ the record's codec bytes ‖ cluster (u64 BE): step 2
    /// reads the sketch and parts alone ([`Restored::refs_of`]), step 4 the
    /// whole.
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        match &self.rec.sketch {
            Some(s) => {
                b.push(1);
                b.extend_from_slice(&s.0);
            }
            None => b.push(0),
        }
        write_parts(&mut b, &self.rec.parts)
            .unwrap_or_else(|e| unreachable!("a decoded record has at most 12 parts: {e}"));
        match &self.text {
            Some(t) => {
                b.push(1);
                // A text may pass u16 (`write_str`'s) but not u32: a
                // document is at most a few MiB.
                b.extend_from_slice(&u32::try_from(t.len()).unwrap_or(u32::MAX).to_be_bytes());
                b.extend_from_slice(t.as_bytes());
            }
            None => b.push(0),
        }
        b.extend_from_slice(&store::codec::encode_record(&self.rec));
        b.extend_from_slice(&self.cluster.to_be_bytes());
        b
    }

    /// The sketch and parts of encoded bytes, without decoding the
    /// record; with the bytes after them.
    #[allow(clippy::type_complexity)]
    pub(super) fn refs_of(
        b: &[u8],
    ) -> std::result::Result<(Option<[u8; SKETCH_BYTES]>, Vec<u64>, &[u8]), String> {
        let truncated = || "a restored record is truncated".to_string();
        let (sketch, mut rest) = match b.split_first() {
            Some((0, rest)) => (None, rest),
            Some((1, rest)) if rest.len() >= SKETCH_BYTES => {
                let (s, rest) = rest.split_at(SKETCH_BYTES);
                (s.try_into().ok(), rest)
            }
            _ => return Err(truncated()),
        };
        let parts = read_parts(&mut rest).map_err(|_| truncated())?;
        Ok((sketch, parts, rest))
    }

    pub(super) fn decode(b: &[u8]) -> std::result::Result<Restored, String> {
        let truncated = || "a restored record is truncated".to_string();
        let (_, _, mut body) = Restored::refs_of(b)?;
        let text = match body.split_first() {
            Some((0, rest)) => {
                body = rest;
                None
            }
            Some((1, rest)) if rest.len() >= 4 => {
                let (n, rest) = rest.split_at(4);
                let n = u32::from_be_bytes(n.try_into().map_err(|_| truncated())?) as usize;
                let (t, rest) = (rest.get(..n).ok_or_else(truncated)?, &rest[n..]);
                body = rest;
                Some(String::from_utf8(t.to_vec()).map_err(|_| "a restored text is not UTF-8")?)
            }
            _ => return Err(truncated()),
        };
        let split = body.len().checked_sub(8).ok_or_else(truncated)?;
        let (rec, cluster) = body.split_at(split);
        Ok(Restored {
            rec: store::codec::decode_record(rec)?,
            cluster: u64::from_be_bytes(cluster.try_into().map_err(|_| truncated())?),
            text,
        })
    }
}
