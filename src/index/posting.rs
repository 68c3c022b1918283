//! Bucket and segment keys, and the postings: packed 8-byte fingerprints, their heads, operands and merge.

use super::*;

/// The head key of bucket `block` (in any block family).
#[inline]
pub fn bucket_key(block: u16) -> [u8; BUCKET_KEY_LEN] {
    block.to_be_bytes()
}

/// The key of sealed segment `n` (>= 1) of bucket `block`.
#[inline]
pub fn segment_key(block: u16, n: u32) -> [u8; SEGMENT_KEY_LEN] {
    let mut k = [0u8; SEGMENT_KEY_LEN];
    k[..2].copy_from_slice(&block.to_be_bytes());
    k[2..].copy_from_slice(&n.to_be_bytes());
    k
}

/// The block value of a head key; `Err` carries the reason.
pub fn decode_bucket_key(key: &[u8]) -> Result<u16, String> {
    match key {
        [a, b] => Ok(u16::from_be_bytes([*a, *b])),
        _ => Err(format!(
            "bucket key is {} bytes (expected {BUCKET_KEY_LEN})",
            key.len()
        )),
    }
}

/// The block value and segment number of a block family key: 0 for a
/// head, 1.. for a sealed segment. `Err` carries the reason.
pub fn decode_block_key(key: &[u8]) -> Result<(u16, u32), String> {
    match key {
        [a, b] => Ok((u16::from_be_bytes([*a, *b]), 0)),
        [a, b, c, d, e, f] => match u32::from_be_bytes([*c, *d, *e, *f]) {
            0 => Err("segment number 0 (the head has no number)".into()),
            n => Ok((u16::from_be_bytes([*a, *b]), n)),
        },
        _ => Err(format!(
            "block family key is {} bytes (expected {BUCKET_KEY_LEN} or {SEGMENT_KEY_LEN})",
            key.len()
        )),
    }
}

/// The posting of sorted fingerprints `fps` (a segment, or a head
/// without segments).
pub fn encode_posting(fps: &[Fingerprint]) -> Vec<u8> {
    let mut v = Vec::with_capacity(fps.len() * ENTRY_LEN);
    for fp in fps {
        v.extend_from_slice(&fp.value().to_be_bytes());
    }
    v
}

/// A head value: the entries `fps` and, when `segments` > 0, the trailer.
pub fn encode_head(fps: &[Fingerprint], segments: u32) -> Vec<u8> {
    let mut v = encode_posting(fps);
    if segments > 0 {
        v.extend_from_slice(&segments.to_be_bytes());
    }
    v
}

/// A head value's entries and its number of sealed segments (0 without a
/// trailer). `Err` when the length is neither 8m nor 8m + 4.
#[inline]
pub fn split_head(value: &[u8]) -> Result<(&[u8], u32), String> {
    match value.len() % ENTRY_LEN {
        0 => Ok((value, 0)),
        TRAILER_LEN => {
            let (entries, t) = value.split_at(value.len() - TRAILER_LEN);
            let n = u32::from_be_bytes([t[0], t[1], t[2], t[3]]);
            if n == 0 {
                return Err("head trailer names 0 segments".into());
            }
            Ok((entries, n))
        }
        r => Err(format!(
            "posting is {} bytes, {r} more than a whole number of entries",
            value.len()
        )),
    }
}

/// The fingerprints of whole 8-byte entries, without checks beyond the
/// length: the query loop's fast path. `None` if the length is not a
/// multiple of 8 (a head's trailer must be split off first).
#[inline]
pub fn posting_entries(value: &[u8]) -> Option<impl Iterator<Item = Fingerprint> + '_> {
    value
        .len()
        .is_multiple_of(ENTRY_LEN)
        .then(|| posting_fingerprints(value))
}

/// Decodes and checks a value of block family `i` under `key` (a head or
/// a sealed segment): whole entries, strictly ascending, each in the
/// bucket its key names; a trailer only on a head. Returns the
/// fingerprints and the head's number of segments (0 for a segment).
/// `Err` carries the reason. An empty value (a bucket whose fingerprints
/// all left) is valid.
pub fn decode_posting(
    i: usize,
    key: &[u8],
    value: &[u8],
) -> Result<(Vec<Fingerprint>, u32), String> {
    let (block, segment) = decode_block_key(key)?;
    let (entries, segments) = if segment == 0 {
        split_head(value)?
    } else if value.len().is_multiple_of(ENTRY_LEN) {
        (value, 0)
    } else {
        return Err(format!(
            "segment is {} bytes, not a multiple of {ENTRY_LEN}",
            value.len()
        ));
    };
    let mut out: Vec<Fingerprint> = Vec::with_capacity(entries.len() / ENTRY_LEN);
    for fp in posting_entries(entries).into_iter().flatten() {
        if i < BLOCKS && fp.block(i) != block {
            return Err(format!(
                "fingerprint {fp} is in bucket {block:04x}, but its block {i} is {:04x}",
                fp.block(i)
            ));
        }
        if out.last().is_some_and(|last| *last >= fp) {
            return Err(format!("fingerprint {fp} is out of order or repeated"));
        }
        out.push(fp);
    }
    Ok((out, segments))
}

/// The merge operand that puts `fp` in a bucket (`add`) or takes it out.
pub fn posting_operand(add: bool, fp: Fingerprint) -> [u8; OPERAND_LEN] {
    let mut op = [0u8; OPERAND_LEN];
    op[0] = if add { b'+' } else { b'-' };
    op[1..].copy_from_slice(&fp.value().to_be_bytes());
    op
}

/// Folds merge operands (oldest first) into an existing head or segment:
/// for each fingerprint the last operand naming it decides whether it is
/// in the result (`+`) or not (`-`); fingerprints no operand names stay as
/// they were. A head's trailer is kept. Malformed bytes are skipped: a
/// merge cannot fail without making the whole family unreadable, and
/// `verify` compares every posting with the records. An empty result means
/// the bucket (or segment) is empty.
pub fn merge_posting<'a>(
    existing: Option<&[u8]>,
    operands: impl IntoIterator<Item = &'a [u8]>,
) -> Vec<u8> {
    // (fingerprint, position) of each operand entry, add or not: after a
    // stable sort by fingerprint, the last of each run is the one that
    // counts.
    let mut ops: Vec<(u64, bool)> = Vec::new();
    for op in operands {
        for e in op.chunks_exact(OPERAND_LEN) {
            let mut b = [0u8; 8];
            b.copy_from_slice(&e[1..]);
            match e[0] {
                b'+' => ops.push((u64::from_be_bytes(b), true)),
                b'-' => ops.push((u64::from_be_bytes(b), false)),
                _ => {}
            }
        }
    }
    ops.sort_by_key(|o| o.0); // stable: the order of one fingerprint's operands is kept
    let mut last: Vec<(u64, bool)> = Vec::with_capacity(ops.len());
    for o in ops {
        match last.last_mut() {
            Some(l) if l.0 == o.0 => *l = o,
            _ => last.push(o),
        }
    }
    let (entries, trailer) = match existing {
        None => (&[][..], &[][..]),
        Some(v) => {
            let cut = v.len() - v.len() % ENTRY_LEN;
            let t = &v[cut..];
            (&v[..cut], if t.len() == TRAILER_LEN { t } else { &[][..] })
        }
    };
    // The entries between two operands are copied whole: a read of a
    // bucket with a few operands (what a write leaves until compaction)
    // costs a copy of its posting and a binary search per operand, not a
    // step per entry. Entries are ascending (a damaged posting that is not
    // still gives whole entries and the trailer).
    let mut out = Vec::with_capacity(entries.len() + last.len() * ENTRY_LEN + trailer.len());
    let (entries, _) = entries.as_chunks::<ENTRY_LEN>();
    let mut pos = 0;
    for (fp, add) in last {
        let rest = &entries[pos..];
        let before = rest.partition_point(|e| u64::from_be_bytes(*e) < fp);
        out.extend_from_slice(rest[..before].as_flattened());
        pos += before;
        if rest
            .get(before)
            .is_some_and(|e| u64::from_be_bytes(*e) == fp)
        {
            pos += 1;
        }
        if add {
            out.extend_from_slice(&fp.to_be_bytes());
        }
    }
    out.extend_from_slice(entries[pos..].as_flattened());
    out.extend_from_slice(trailer);
    out
}

/// Concatenates merge operands (RocksDB's partial merge).
pub fn concat_operands<'a>(operands: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    operands.into_iter().flatten().copied().collect()
}
