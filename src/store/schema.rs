//! The schema, in one place: what one document is in each column family.
//! Everything that
//! writes documents (the writer, repair, migrate, import, backup) goes
//! through these functions; the byte layouts themselves are in
//! [`crate::index`] (bucket keys, postings, document keys) and
//! [`super::codec`] (records). Pure: no RocksDB.

use super::codec::{self, Record};
use crate::fingerprint::parts::PARTS;
use crate::fingerprint::{Fingerprint, Sketch, SKETCH_BYTES};
use crate::index::RefKey;

/// A document's part hashes as its `refs` value holds them (at most
/// [`PARTS`], ascending; see [`crate::index::parts`]), by value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Parts {
    len: u8,
    hashes: [u64; PARTS],
}

impl Parts {
    /// The first [`PARTS`] of `parts` (ascending): those indexed.
    pub fn new(parts: &[u64]) -> Parts {
        let mut out = Parts::default();
        for (slot, p) in out.hashes.iter_mut().zip(parts) {
            *slot = *p;
            out.len += 1;
        }
        out
    }

    pub fn as_slice(&self) -> &[u64] {
        &self.hashes[..usize::from(self.len)]
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// What a `refs` value holds: the document's sketch, and its parts (only
/// beside a sketch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RefValue {
    pub sketch: Option<Sketch>,
    pub parts: Parts,
}

impl RefValue {
    /// The `refs` value of a document with record `rec`.
    pub fn of(rec: &Record) -> RefValue {
        RefValue {
            sketch: rec.sketch,
            parts: match rec.sketch {
                Some(_) => Parts::new(&rec.parts),
                None => Parts::default(),
            },
        }
    }
}

/// The entries of one document outside the block families: `docs` (id →
/// record), `refs` (fingerprint ‖ id → sketch) and its place in the
/// ingest order. Its fingerprint's posting entries are written per
/// fingerprint, not per document: see `Store::write_postings`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocEntries {
    pub docs: (Vec<u8>, Vec<u8>),
    pub refs: (Vec<u8>, Vec<u8>),
    /// The `o` entry in the `clusters` family: ord -> id.
    pub order: ([u8; 9], Vec<u8>),
    /// The `t` entry in the `clusters` family, for a document with its
    /// own time: time ‖ ord -> id.
    pub dated: Option<([u8; 17], Vec<u8>)>,
}

/// The entries that store document `id` with record `rec`.
pub fn doc_entries(id: &str, rec: &Record) -> DocEntries {
    DocEntries {
        docs: docs_entry(id, rec),
        refs: refs_entry(rec.fingerprint, id, &RefValue::of(rec)),
        order: order_entry(rec.ord, id),
        dated: rec.dated.map(|t| time_entry(t, rec.ord, id)),
    }
}

/// The `t` entry of a document of time `time` and ord `ord`: the index of
/// the documents with their own time, oldest first.
pub fn time_entry(time: u64, ord: u64, id: &str) -> ([u8; 17], Vec<u8>) {
    (time_key(time, ord), id.as_bytes().to_vec())
}

/// The `o` entry of the document of ord `ord`: the ingest order index.
pub fn order_entry(ord: u64, id: &str) -> ([u8; 9], Vec<u8>) {
    (order_key(ord), id.as_bytes().to_vec())
}

/// The `docs` entry of document `id`: id → framed record.
pub fn docs_entry(id: &str, rec: &Record) -> (Vec<u8>, Vec<u8>) {
    (id.as_bytes().to_vec(), codec::encode_record(rec))
}

/// The `refs` entry of document `id` with fingerprint `fp` and `refs`
/// value `v`: fingerprint ‖ id → the sketch's 32 bytes, then each part hash
/// (u64 BE, ascending; format 10 on), or nothing for a document without a
/// sketch. A query verifies its candidates from these values alone, and
/// reads the records of its hits only; a write finds the parts of a
/// fingerprint's first document here.
pub fn refs_entry(fp: Fingerprint, id: &str, v: &RefValue) -> (Vec<u8>, Vec<u8>) {
    let value = match &v.sketch {
        Some(s) => {
            let mut out = Vec::with_capacity(SKETCH_BYTES + 8 * v.parts.as_slice().len());
            out.extend_from_slice(&s.0);
            for p in v.parts.as_slice() {
                out.extend_from_slice(&p.to_be_bytes());
            }
            out
        }
        None => Vec::new(),
    };
    (RefKey::encode(fp, id), value)
}

/// The key of fingerprint `fp`'s entry for part `part` in the `parts`
/// family: part ‖ fingerprint, u64 BE each (the value is empty).
pub fn part_key(part: u64, fp: Fingerprint) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&part.to_be_bytes());
    k[8..].copy_from_slice(&fp.value().to_be_bytes());
    k
}

/// The part and fingerprint of a `parts` key; `Err` carries the reason.
pub fn decode_part_key(k: &[u8]) -> std::result::Result<(u64, Fingerprint), String> {
    let k: [u8; 16] = k
        .try_into()
        .map_err(|_| format!("parts key is {} bytes, not 16", k.len()))?;
    let (p, f) = k.split_at(8);
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        w.copy_from_slice(b);
        u64::from_be_bytes(w)
    };
    Ok((word(p), Fingerprint(word(f))))
}

/// The sketch and parts of a `refs` value; `Err` carries the reason.
pub fn decode_refs_value(v: &[u8]) -> std::result::Result<RefValue, String> {
    if v.is_empty() {
        return Ok(RefValue::default());
    }
    let (Some(sketch), Some(rest)) = (v.get(..SKETCH_BYTES), v.get(SKETCH_BYTES..)) else {
        return Err(format!(
            "refs value is {} bytes (a sketch is {SKETCH_BYTES}, none is 0)",
            v.len()
        ));
    };
    if !rest.len().is_multiple_of(8) || rest.len() / 8 > PARTS {
        return Err(format!(
            "refs value is {} bytes: a sketch ({SKETCH_BYTES}) and {} bytes that are not up to {PARTS} part hashes",
            v.len(),
            rest.len()
        ));
    }
    let mut s = [0u8; SKETCH_BYTES];
    s.copy_from_slice(sketch);
    let mut parts = Parts::default();
    for (slot, c) in parts.hashes.iter_mut().zip(rest.chunks_exact(8)) {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        *slot = u64::from_be_bytes(b);
        parts.len += 1;
    }
    crate::fingerprint::parts::check(parts.as_slice(), PARTS)
        .map_err(|e| format!("refs value: {e}"))?;
    Ok(RefValue {
        sketch: Some(Sketch(s)),
        parts,
    })
}

// ---- The `clusters` family ----
//
// The ingest order of every document, and the clusters. Only clusters of
// two or more documents have entries; a document without a `d` entry is a
// cluster of its own, whose id is its ord.
//
//   'o' ‖ ord                       -> id                   (every document, oldest first)
//   't' ‖ time ‖ ord                -> id                   (format 9: the documents with
//                                                            their own time, oldest first)
//   'd' ‖ id                        -> cluster id, u64 BE   (membership)
//   'm' ‖ cluster id ‖ rank (16 B)  -> id                   (members, best first)
//   's' ‖ cluster id                -> size, u64 BE         (>= 2)
//
// A rank is a key the store's keep policy derives from the record, then
// `ord`, both u64 BE: the first member in key order is the representative.
// The policy is the meta entry `keep_policy` (its name in ASCII; stores
// before format 6 have none and ranked by priority).

/// Who represents a cluster: the member the keep policy ranks first. The
/// store's policy is set when it is made (`simdb init --keep`) and changed
/// by `simdb migrate --keep`, which rebuilds the clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KeepPolicy {
    /// The earliest ingested (the default: a later copy never displaces
    /// the representative, so a join never re-checks a cluster).
    #[default]
    First,
    /// The highest input `priority` (none last), then the earliest.
    Priority,
    /// The longest content (bytes), then the earliest.
    Longest,
    /// The latest by the document's time ([`Record::time`]: its own, a
    /// crawl's fetch date, else when it was written), then the latest
    /// written.
    Newest,
}

impl KeepPolicy {
    pub const ALL: [KeepPolicy; 4] = [
        KeepPolicy::First,
        KeepPolicy::Priority,
        KeepPolicy::Longest,
        KeepPolicy::Newest,
    ];

    /// Its name (`first`, `priority`, `longest`, `newest`).
    pub fn name(self) -> &'static str {
        match self {
            KeepPolicy::First => "first",
            KeepPolicy::Priority => "priority",
            KeepPolicy::Longest => "longest",
            KeepPolicy::Newest => "newest",
        }
    }

    /// The key that ranks a record under this policy (smaller first), at
    /// least [`KEPT_KEYS`]: the keys below are the kept documents'.
    fn key(self, rec: &Record) -> u64 {
        self.policy_key(rec).max(KEPT_KEYS)
    }

    /// [`KeepPolicy::key`] before the floor (which only `first`'s constant
    /// and a time past 2106 under `newest` are below).
    fn policy_key(self, rec: &Record) -> u64 {
        match self {
            KeepPolicy::First => 0,
            KeepPolicy::Priority => codec::Priority::rank_key(rec.priority),
            KeepPolicy::Longest => u64::MAX - rec.length,
            // The time in the high half (Unix seconds fit 32 bits until
            // 2106), the ord's low half below: latest written first among
            // documents of one second (an ord counts within a store; a
            // migrated format 3 store's ords hold their second above and
            // their place within it in these bits).
            KeepPolicy::Newest => {
                let time = rec.time().min(u64::from(u32::MAX));
                u64::MAX - (time << 32 | (rec.ord & 0xffff_ffff))
            }
        }
    }
}

impl std::fmt::Display for KeepPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for KeepPolicy {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        KeepPolicy::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                format!("unknown keep policy {s:?} (first, priority, longest or newest)")
            })
    }
}

/// The meta entry of the keep policy.
pub fn keep_policy_entry(keep: KeepPolicy) -> (&'static [u8], &'static [u8]) {
    (super::KEEP_POLICY_KEY, keep.name().as_bytes())
}

/// The keep policy of a `keep_policy` value; `Err` carries the reason.
pub fn decode_keep_policy(v: &[u8]) -> std::result::Result<KeepPolicy, String> {
    std::str::from_utf8(v)
        .map_err(|_| "keep policy is not UTF-8".to_string())?
        .parse()
}

/// The rank keys of kept documents ([`Record::kept`]) are below this,
/// every keep policy's at least this (format 13; before, `first` ranked
/// every document by key 0).
pub const KEPT_KEYS: u64 = 1 << 32;

/// Where a document ranks in its cluster: by its key, then by ord
/// (earliest first). A kept document's key is below [`KEPT_KEYS`], the
/// latest decision first; any other's is its keep policy's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rank {
    pub priority_key: u64,
    pub ord: u64,
}

impl Rank {
    /// The rank of the document stored as `rec` under policy `keep`.
    pub fn of(rec: &Record, keep: KeepPolicy) -> Rank {
        Rank {
            priority_key: match rec.kept {
                Some(seq) => KEPT_KEYS - 1 - seq.min(KEPT_KEYS - 1),
                None => keep.key(rec),
            },
            ord: rec.ord,
        }
    }

    /// The rank a format 12 (or older) store's `m` key or `a` entry holds,
    /// as format 13 ranks it: its key raised to [`KEPT_KEYS`] (no document
    /// of such a store is kept). `None`: it ranks the same.
    pub fn migrated(self) -> Option<Rank> {
        (self.priority_key < KEPT_KEYS).then_some(Rank {
            priority_key: KEPT_KEYS,
            ..self
        })
    }

    pub fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.priority_key.to_be_bytes());
        b[8..].copy_from_slice(&self.ord.to_be_bytes());
        b
    }
}

/// The `o` key of ord `ord`.
pub fn order_key(ord: u64) -> [u8; 9] {
    let mut k = [b'o'; 9];
    k[1..].copy_from_slice(&ord.to_be_bytes());
    k
}

/// The `t` key of a document of time `time` and ord `ord`.
pub fn time_key(time: u64, ord: u64) -> [u8; 17] {
    let mut k = [b't'; 17];
    k[1..9].copy_from_slice(&time.to_be_bytes());
    k[9..].copy_from_slice(&ord.to_be_bytes());
    k
}

/// The time and ord of a `t` key (without its `t`).
pub fn decode_time_key(k: &[u8]) -> std::result::Result<(u64, u64), String> {
    let b: [u8; 16] = k
        .try_into()
        .map_err(|_| format!("time key is {} bytes, not 17", k.len() + 1))?;
    let (t, o) = b.split_at(8);
    Ok((decode_u64(t)?, decode_u64(o)?))
}

/// The `d` key of document `id`.
pub fn membership_key(id: &str) -> Vec<u8> {
    [&b"d"[..], id.as_bytes()].concat()
}

/// The prefix of the `m` keys of cluster `cid`.
pub fn members_prefix(cid: u64) -> [u8; 9] {
    let mut k = [b'm'; 9];
    k[1..].copy_from_slice(&cid.to_be_bytes());
    k
}

/// The `m` key of the member of rank `rank` of cluster `cid`.
pub fn member_key(cid: u64, rank: Rank) -> [u8; 25] {
    let mut k = [0u8; 25];
    k[..9].copy_from_slice(&members_prefix(cid));
    k[9..].copy_from_slice(&rank.to_bytes());
    k
}

/// The `s` key of cluster `cid`.
pub fn size_key(cid: u64) -> [u8; 9] {
    let mut k = [b's'; 9];
    k[1..].copy_from_slice(&cid.to_be_bytes());
    k
}

/// A cluster whose representative changed and whose members are being
/// checked against the new one, a bounded step at a time (the `a` entry:
/// `a` ‖ cid → from ‖ before, 16 + 8 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stale {
    /// The members of rank `from` on are still to be checked.
    pub from: Rank,
    /// Members with an ord from this one on joined after the change, and
    /// were confirmed against the representative then: not checked.
    pub before: u64,
}

/// The `a` key of cluster `cid`.
pub fn stale_key(cid: u64) -> [u8; 9] {
    let mut k = [b'a'; 9];
    k[1..].copy_from_slice(&cid.to_be_bytes());
    k
}

/// The `a` entry of cluster `cid`.
pub fn stale_entry(cid: u64, s: &Stale) -> ([u8; 9], [u8; 24]) {
    let mut v = [0u8; 24];
    v[..16].copy_from_slice(&s.from.to_bytes());
    v[16..].copy_from_slice(&s.before.to_be_bytes());
    (stale_key(cid), v)
}

/// The cluster id and [`Stale`] of an `a` entry (key without its `a`).
pub fn decode_stale(k: &[u8], v: &[u8]) -> std::result::Result<(u64, Stale), String> {
    let cid = decode_u64(k)?;
    let v: [u8; 24] = v
        .try_into()
        .map_err(|_| format!("stale entry is {} bytes, not 24", v.len()))?;
    let u = |i: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&v[i..i + 8]);
        u64::from_be_bytes(x)
    };
    Ok((
        cid,
        Stale {
            from: Rank {
                priority_key: u(0),
                ord: u(8),
            },
            before: u(16),
        },
    ))
}

/// The `d` entry: document `id` is in cluster `cid` (id → cid, u64 BE).
pub fn membership_entry(id: &str, cid: u64) -> (Vec<u8>, [u8; 8]) {
    (membership_key(id), cid.to_be_bytes())
}

/// The `m` entry: the member of rank `rank` of cluster `cid` is `id`
/// (`m` ‖ cid ‖ rank → the id's UTF-8 bytes).
pub fn member_entry(cid: u64, rank: Rank, id: &str) -> ([u8; 25], Vec<u8>) {
    (member_key(cid, rank), id.as_bytes().to_vec())
}

/// The `s` entry: cluster `cid` has `size` members (u64 BE).
pub fn size_entry(cid: u64, size: u64) -> ([u8; 9], [u8; 8]) {
    (size_key(cid), size.to_be_bytes())
}

// ---- The `decisions` family (format 12; `k` keys since format 13) ----
//
//   'k' ‖ id                       -> sequence, u64 BE   ("keep this one": the
//                                                        standing decision on id)
//   'n' ‖ len(a), u16 BE ‖ a ‖ b   -> sequence, u64 BE   ("not a copy", one key
//                                                        for each order of the pair)
//   'l' ‖ sequence, u64 BE         -> framed decision    (the log, oldest first;
//                                                        see `codec::Decision`)
//
// An id is at most 4,096 bytes, so its length fits the u16; the length
// makes the split of a key unambiguous whatever bytes the ids hold.

/// The `n` key of the pair (`a`, `b`): `a` is not a copy of `b`.
pub fn veto_key(a: &str, b: &str) -> Vec<u8> {
    let mut k = veto_prefix(a);
    k.extend_from_slice(b.as_bytes());
    k
}

/// The prefix of the `n` keys of every pair whose first id is `a`.
pub fn veto_prefix(a: &str) -> Vec<u8> {
    let n = u16::try_from(a.len()).unwrap_or(u16::MAX);
    let mut k = Vec::with_capacity(3 + a.len());
    k.push(b'n');
    k.extend_from_slice(&n.to_be_bytes());
    k.extend_from_slice(a.as_bytes());
    k
}

/// The pair of an `n` key (with its `n`).
pub fn decode_veto_key(k: &[u8]) -> std::result::Result<(String, String), String> {
    let bad = || format!("not-a-copy key of {} bytes is malformed", k.len());
    let (Some(b'n'), Some(n)) = (k.first(), k.get(1..3)) else {
        return Err(bad());
    };
    let n = usize::from(u16::from_be_bytes([n[0], n[1]]));
    let (Some(a), Some(b)) = (k.get(3..3 + n), k.get(3 + n..)) else {
        return Err(bad());
    };
    let utf8 = |x: &[u8]| String::from_utf8(x.to_vec()).map_err(|_| bad());
    Ok((utf8(a)?, utf8(b)?))
}

/// The `k` key of document `id` ("keep this one").
pub fn keep_key(id: &str) -> Vec<u8> {
    [&b"k"[..], id.as_bytes()].concat()
}

/// The id of a `k` key (with its `k`).
pub fn decode_keep_key(k: &[u8]) -> std::result::Result<String, String> {
    match k.split_first() {
        Some((b'k', id)) => String::from_utf8(id.to_vec())
            .map_err(|_| format!("keep key of {} bytes is not UTF-8", k.len())),
        _ => Err(format!("keep key of {} bytes is malformed", k.len())),
    }
}

/// The `l` key of log entry `seq`.
pub fn decision_log_key(seq: u64) -> [u8; 9] {
    let mut k = [b'l'; 9];
    k[1..].copy_from_slice(&seq.to_be_bytes());
    k
}

/// The meta entries whose value is one u64, big-endian.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaU64 {
    /// Documents in the store.
    DocCount,
    /// Of them, the short ones.
    ShortCount,
    /// The ord the next written document takes.
    NextOrd,
    /// The latest `ingested_at` written.
    Clock,
}

impl MetaU64 {
    /// Its key in the `meta` family.
    pub fn key(self) -> &'static [u8] {
        match self {
            MetaU64::DocCount => super::DOC_COUNT_KEY,
            MetaU64::ShortCount => super::SHORT_COUNT_KEY,
            MetaU64::NextOrd => super::NEXT_ORD_KEY,
            MetaU64::Clock => super::CLOCK_KEY,
        }
    }

    /// Its entry with value `v`.
    pub fn entry(self, v: u64) -> (&'static [u8], [u8; 8]) {
        (self.key(), v.to_be_bytes())
    }

    /// Its entry with value `v`, as owned bytes (for a list of entries).
    pub fn owned_entry(self, v: u64) -> (Vec<u8>, Vec<u8>) {
        (self.key().to_vec(), v.to_be_bytes().to_vec())
    }

    /// Its value; `Err` carries the reason.
    pub fn decode(self, v: &[u8]) -> std::result::Result<u64, String> {
        match self {
            MetaU64::DocCount | MetaU64::ShortCount => codec::decode_doc_count(v),
            MetaU64::NextOrd | MetaU64::Clock => decode_u64(v),
        }
    }
}

/// The meta entry of the magic that marks a simdb store.
pub fn magic_entry() -> (&'static [u8], &'static [u8]) {
    (super::MAGIC_KEY, super::MAGIC)
}

/// The meta entry of the recipe: its JSON (decoded by
/// [`codec::decode_recipe`]).
pub fn recipe_entry(
    recipe: &crate::fingerprint::Recipe,
) -> std::result::Result<(&'static [u8], Vec<u8>), String> {
    let json = serde_json::to_vec(recipe).map_err(|e| e.to_string())?;
    Ok((super::RECIPE_KEY, json))
}

/// The meta entry of the format version (u32 BE).
pub fn format_version_entry(version: u32) -> (&'static [u8], [u8; 4]) {
    (super::FORMAT_VERSION_KEY, version.to_be_bytes())
}

/// A u64 BE value (a cluster id or size, a meta count); `Err` carries the
/// reason.
pub fn decode_u64(v: &[u8]) -> std::result::Result<u64, String> {
    let b: [u8; 8] = v
        .try_into()
        .map_err(|_| format!("value is {} bytes, not 8", v.len()))?;
    Ok(u64::from_be_bytes(b))
}

/// The cluster id and rank of an `m` key (without its `m`); `Err` carries
/// the reason.
pub fn decode_member_key(k: &[u8]) -> std::result::Result<(u64, Rank), String> {
    let b: [u8; 24] = k
        .try_into()
        .map_err(|_| format!("member key is {} bytes, not 25", k.len() + 1))?;
    let u = |i: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&b[i..i + 8]);
        u64::from_be_bytes(x)
    };
    Ok((
        u(0),
        Rank {
            priority_key: u(8),
            ord: u(16),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes of every clusters-family and meta entry, pinned: a change
    /// here is a change of the on-disk format.
    #[test]
    fn cluster_and_meta_entries_are_pinned() {
        let rank = Rank {
            priority_key: 0x0102_0304_0506_0708,
            ord: 9,
        };
        assert_eq!(
            membership_entry("ab", 0x0a0b),
            (b"dab".to_vec(), [0, 0, 0, 0, 0, 0, 0x0a, 0x0b])
        );
        let (k, v) = member_entry(5, rank, "ab");
        assert_eq!(
            k,
            [b'm', 0, 0, 0, 0, 0, 0, 0, 5, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 9]
        );
        assert_eq!(v, b"ab".to_vec());
        assert_eq!(decode_member_key(&k[1..]), Ok((5, rank)));
        assert_eq!(
            size_entry(5, 3),
            ([b's', 0, 0, 0, 0, 0, 0, 0, 5], [0, 0, 0, 0, 0, 0, 0, 3])
        );
        assert_eq!(
            order_entry(7, "ab"),
            ([b'o', 0, 0, 0, 0, 0, 0, 0, 7], b"ab".to_vec())
        );
        for (m, key) in [
            (MetaU64::DocCount, &b"doc_count"[..]),
            (MetaU64::ShortCount, b"short_count"),
            (MetaU64::NextOrd, b"next_ord"),
            (MetaU64::Clock, b"clock"),
        ] {
            assert_eq!(m.entry(0x0102), (key, [0, 0, 0, 0, 0, 0, 1, 2]));
            assert_eq!(
                m.owned_entry(3),
                (key.to_vec(), vec![0, 0, 0, 0, 0, 0, 0, 3])
            );
            assert_eq!(m.decode(&[0, 0, 0, 0, 0, 0, 1, 2]), Ok(0x0102));
            assert!(m.decode(&[1, 2]).is_err());
        }
        assert_eq!(
            format_version_entry(5),
            (&b"format_version"[..], [0, 0, 0, 5])
        );
    }

    /// The `decisions` family's keys, pinned.
    #[test]
    fn decision_keys_are_pinned() {
        assert_eq!(veto_key("ab", "c"), b"n\x00\x02abc".to_vec());
        assert_eq!(veto_prefix("ab"), b"n\x00\x02ab".to_vec());
        assert_eq!(
            decode_veto_key(&veto_key("a\0b", "北")),
            Ok(("a\0b".to_string(), "北".to_string()))
        );
        assert!(decode_veto_key(b"n\x00\x09ab").is_err());
        assert!(decode_veto_key(b"x").is_err());
        assert_eq!(decision_log_key(0x0102), [b'l', 0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(keep_key("北1"), "k北1".as_bytes().to_vec());
        assert_eq!(decode_keep_key(&keep_key("北1")), Ok("北1".to_string()));
        assert!(decode_keep_key(b"n1").is_err());
        assert!(decode_keep_key(b"k\xff").is_err());
    }

    #[test]
    fn entries_are_the_codecs_bytes() {
        let fp = Fingerprint(0x0123_4567_89ab_cdef);
        let rec = Record {
            fingerprint: fp,
            content_hash: 1,
            length: 2,
            ingested_at: 3,
            source: "s".into(),
            terms: 0,
            sketch: None,
            top_terms: Vec::new(),
            weak_bits: Vec::new(),
            ord: 0,
            priority: None,
            dated: None,
            parts: Vec::new(),
            kept: None,
            fine: None,
        };
        let e = doc_entries("id", &rec);
        assert_eq!(e.dated, None);
        assert_eq!(e.docs, (b"id".to_vec(), codec::encode_record(&rec)));
        assert_eq!(e.refs, (RefKey::encode(fp, "id"), Vec::new()));
        let with = Record {
            sketch: Some(Sketch([7; SKETCH_BYTES])),
            ..rec.clone()
        };
        let e2 = doc_entries("id", &with);
        assert_eq!(e2.refs.1, vec![7; SKETCH_BYTES]);
        assert_eq!(
            decode_refs_value(&e2.refs.1).map(|v| v.sketch),
            Ok(with.sketch)
        );
        assert_eq!(decode_refs_value(&[]), Ok(RefValue::default()));
        assert!(decode_refs_value(&[1, 2]).is_err());
        assert_eq!(e.refs.0[..8], fp.value().to_be_bytes());
        assert_eq!(e.order, (order_key(0), b"id".to_vec()));
        assert_eq!(order_key(0x0102)[..], [b'o', 0, 0, 0, 0, 0, 0, 1, 2]);
        // A document with its own time is in the time index too.
        let dated = Record {
            dated: Some(0x0304),
            ord: 5,
            ..rec.clone()
        };
        let (k, v) = doc_entries("id", &dated).dated.unwrap();
        assert_eq!(k, [b't', 0, 0, 0, 0, 0, 0, 3, 4, 0, 0, 0, 0, 0, 0, 0, 5]);
        assert_eq!(v, b"id".to_vec());
        assert_eq!(decode_time_key(&k[1..]), Ok((0x0304, 5)));
        assert!(decode_time_key(&k[2..]).is_err());
    }

    #[test]
    fn refs_values_hold_the_sketch_then_the_parts() {
        let with = Record {
            fingerprint: Fingerprint(1),
            content_hash: 1,
            length: 2,
            ingested_at: 3,
            source: "s".into(),
            terms: 0,
            sketch: Some(Sketch([7; SKETCH_BYTES])),
            top_terms: Vec::new(),
            weak_bits: Vec::new(),
            ord: 0,
            priority: None,
            dated: None,
            parts: Vec::new(),
            kept: None,
            fine: None,
        };
        let rec = Record {
            sketch: None,
            ..with.clone()
        };
        // Parts follow the sketch (format 10), u64 BE each; without a
        // sketch there are none.
        let parted = Record {
            parts: vec![1, 0x0203],
            ..with.clone()
        };
        let e3 = doc_entries("id", &parted);
        let want = [
            &[7u8; SKETCH_BYTES][..],
            &1u64.to_be_bytes(),
            &0x0203u64.to_be_bytes(),
        ]
        .concat();
        assert_eq!(e3.refs.1, want);
        let v = decode_refs_value(&e3.refs.1).unwrap();
        assert_eq!(
            (v.sketch, v.parts.as_slice()),
            (with.sketch, &[1, 0x0203][..])
        );
        let bare_parted = Record {
            parts: vec![1],
            ..rec.clone()
        };
        assert_eq!(doc_entries("id", &bare_parted).refs.1, Vec::<u8>::new());
        // Not whole part hashes, too many, or out of order: corruption.
        assert!(decode_refs_value(&want[..SKETCH_BYTES + 3]).is_err());
        assert!(decode_refs_value(&[&want[..], &[0; 8 * PARTS]].concat()).is_err());
        let unordered = [
            &[7u8; SKETCH_BYTES][..],
            &2u64.to_be_bytes(),
            &1u64.to_be_bytes(),
        ]
        .concat();
        assert!(decode_refs_value(&unordered).is_err());
        // A `parts` key: part ‖ fingerprint, u64 BE each.
        let k = part_key(0x0102, Fingerprint(0x0304));
        assert_eq!(k, [0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 3, 4]);
        assert_eq!(decode_part_key(&k), Ok((0x0102, Fingerprint(0x0304))));
        assert!(decode_part_key(&k[1..]).is_err());
    }

    #[test]
    fn newest_ranks_by_the_documents_time_then_the_latest_written() {
        let rec = |ingested_at: u64, ord: u64, dated: Option<u64>| Record {
            fingerprint: Fingerprint(1),
            content_hash: 1,
            length: 2,
            ingested_at,
            source: String::new(),
            terms: 0,
            sketch: None,
            top_terms: Vec::new(),
            weak_bits: Vec::new(),
            ord,
            priority: None,
            dated,
            parts: Vec::new(),
            kept: None,
            fine: None,
        };
        let rank = |r: &Record| Rank::of(r, KeepPolicy::Newest);
        // Undated: by ord, latest first, as before format 9 (write times
        // never go backwards), within a second too.
        let undated = [rec(100, 1, None), rec(100, 2, None), rec(101, 3, None)];
        assert!(rank(&undated[2]) < rank(&undated[1]));
        assert!(rank(&undated[1]) < rank(&undated[0]));
        // A migrated format 3 store's ords: (second << 32 | place).
        let old = [rec(100, 100 << 32, None), rec(100, 100 << 32 | 1, None)];
        assert!(rank(&old[1]) < rank(&old[0]));
        // A later crawl written earlier outranks an older crawl written later.
        let (new_crawl, old_crawl) = (rec(200, 1, Some(150)), rec(300, 2, Some(120)));
        assert!(rank(&new_crawl) < rank(&old_crawl));
        assert!(rank(&rec(130, 3, None)) < rank(&old_crawl));
    }

    #[test]
    fn cluster_keys_round_trip_and_rank_by_priority_then_ord() {
        use crate::store::codec::Priority;
        let rank = |p: Option<f64>, ord: u64| Rank {
            priority_key: Priority::rank_key(p.and_then(Priority::new)),
            ord,
        };
        let r = rank(Some(2.5), 0x0a0b);
        let k = member_key(7, r);
        assert_eq!(k[0], b'm');
        assert_eq!(&k[..9], &members_prefix(7)[..]);
        assert_eq!(decode_member_key(&k[1..]).unwrap(), (7, r));
        assert!(decode_member_key(&k[2..]).is_err());
        assert!(decode_member_key(&[]).is_err());
        assert_eq!(size_key(7)[..], [b's', 0, 0, 0, 0, 0, 0, 0, 7]);
        assert_eq!(membership_key("ab"), b"dab".to_vec());
        assert_eq!(decode_u64(&9u64.to_be_bytes()).unwrap(), 9);
        assert!(decode_u64(&[1, 2]).is_err());
        // Key order is rank order: priority (highest first, none last),
        // then ord.
        let mut keys: Vec<[u8; 25]> = [
            rank(None, 1),
            rank(Some(-1.0), 9),
            rank(Some(3.0), 5),
            rank(Some(3.0), 2),
            rank(None, 0),
        ]
        .iter()
        .map(|r| member_key(1, *r))
        .collect();
        keys.sort();
        let ords: Vec<u64> = keys
            .iter()
            .map(|k| decode_member_key(&k[1..]).unwrap().1.ord)
            .collect();
        assert_eq!(ords, [2, 5, 9, 0, 1]);
    }
}
