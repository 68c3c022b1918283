//! Reading and writing the `clusters` family (layout in [`super::schema`]),
//! and the ingest-order meta values.

use rocksdb::{Direction, IteratorMode, ReadOptions};

use super::query::read_at;
use super::schema::{self, Rank};
use super::{codec, Batch, Snapshot, Store, CLUSTERS, DOCS, META};
use crate::error::{Error, Result};

impl Store {
    /// The cluster id in document `id`'s `d` entry (`None`: the document
    /// is alone, or absent).
    pub fn cluster_entry(&self, id: &str) -> Result<Option<u64>> {
        self.cluster_entry_opt(id, &ReadOptions::default())
    }

    /// [`Store::cluster_entry`] at snapshot `at`.
    pub(crate) fn cluster_entry_at(&self, at: &Snapshot<'_>, id: &str) -> Result<Option<u64>> {
        self.cluster_entry_opt(id, &read_at(at))
    }

    fn cluster_entry_opt(&self, id: &str, ro: &ReadOptions) -> Result<Option<u64>> {
        let key = schema::membership_key(id);
        match self.db.get_pinned_cf_opt(self.cf(CLUSTERS), &key, ro)? {
            None => Ok(None),
            Some(v) => schema::decode_u64(&v)
                .map(Some)
                .map_err(|r| Error::corrupt(CLUSTERS, &key, r)),
        }
    }

    /// The size in cluster `cid`'s `s` entry (`None`: no such cluster).
    pub fn cluster_size(&self, cid: u64) -> Result<Option<u64>> {
        let key = schema::size_key(cid);
        match self.db.get_pinned_cf(self.cf(CLUSTERS), key)? {
            None => Ok(None),
            Some(v) => schema::decode_u64(&v)
                .map(Some)
                .map_err(|r| Error::corrupt(CLUSTERS, &key, r)),
        }
    }

    /// Cluster `cid`'s size (its `s` entry) at `at`.
    pub(crate) fn cluster_size_at(&self, at: &Snapshot<'_>, cid: u64) -> Result<Option<u64>> {
        let key = schema::size_key(cid);
        match self
            .db
            .get_pinned_cf_opt(self.cf(CLUSTERS), key, &read_at(at))?
        {
            None => Ok(None),
            Some(v) => schema::decode_u64(&v)
                .map(Some)
                .map_err(|r| Error::corrupt(CLUSTERS, &key, r)),
        }
    }

    /// Cluster `cid`'s size (its `s` entry) and representative (its first
    /// member in rank order) at `at`: two reads, whatever its size. `None`
    /// when it has no `s` entry or no member.
    pub(crate) fn cluster_head_at(
        &self,
        at: &Snapshot<'_>,
        cid: u64,
    ) -> Result<Option<(u64, String)>> {
        let key = schema::size_key(cid);
        let size = match self
            .db
            .get_pinned_cf_opt(self.cf(CLUSTERS), key, &read_at(at))?
        {
            None => return Ok(None),
            Some(v) => schema::decode_u64(&v).map_err(|r| Error::corrupt(CLUSTERS, &key, r))?,
        };
        let mut first = None;
        self.for_each_member_opt(cid, None, read_at(at), |_, id| {
            first = Some(id.to_string());
            Ok(false)
        })?;
        Ok(first.map(|rep| (size, rep)))
    }

    /// The members of cluster `cid` in rank order (representative first).
    pub fn cluster_members(&self, cid: u64) -> Result<Vec<(Rank, String)>> {
        self.cluster_members_opt(cid, ReadOptions::default())
    }

    fn cluster_members_opt(&self, cid: u64, ro: ReadOptions) -> Result<Vec<(Rank, String)>> {
        self.first_members_opt(cid, usize::MAX, ro)
    }

    /// The first `n` members of cluster `cid` in rank order, at `at`.
    pub(crate) fn first_members_at(
        &self,
        at: &Snapshot<'_>,
        cid: u64,
        n: usize,
    ) -> Result<Vec<(Rank, String)>> {
        self.first_members_opt(cid, n, read_at(at))
    }

    /// At most `n` members of cluster `cid` after rank `after` (from the
    /// first: `None`), in rank order, at `at`: a page of them.
    pub(crate) fn members_after_at(
        &self,
        at: &Snapshot<'_>,
        cid: u64,
        after: Option<Rank>,
        n: usize,
    ) -> Result<Vec<(Rank, String)>> {
        let mut out = Vec::new();
        if n == 0 {
            return Ok(out);
        }
        self.for_each_member_opt(cid, after, read_at(at), |rank, id| {
            if Some(rank) != after {
                out.push((rank, id.to_string()));
            }
            Ok(out.len() < n)
        })?;
        Ok(out)
    }

    fn first_members_opt(
        &self,
        cid: u64,
        n: usize,
        ro: ReadOptions,
    ) -> Result<Vec<(Rank, String)>> {
        let mut out = Vec::new();
        if n == 0 {
            return Ok(out);
        }
        self.for_each_member_opt(cid, None, ro, |rank, id| {
            out.push((rank, id.to_string()));
            Ok(out.len() < n)
        })?;
        Ok(out)
    }

    /// Calls `visit(cid, size)` for the clusters of id `from` on, in id
    /// order, at `at`, until it returns `false`.
    pub(crate) fn for_each_cluster_from_at(
        &self,
        at: &Snapshot<'_>,
        from: u64,
        mut visit: impl FnMut(u64, u64) -> Result<bool>,
    ) -> Result<()> {
        let mut ro = read_at(at);
        ro.set_iterate_upper_bound(b"t".to_vec());
        let mut it = self.db.raw_iterator_cf_opt(self.cf(CLUSTERS), ro);
        it.seek(schema::size_key(from));
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            let cid = schema::decode_u64(&k[1..]).map_err(|r| Error::corrupt(CLUSTERS, k, r))?;
            let size = schema::decode_u64(v).map_err(|r| Error::corrupt(CLUSTERS, k, r))?;
            if !visit(cid, size)? {
                break;
            }
            it.next();
        }
        it.status()?;
        Ok(())
    }

    /// Calls `visit(rank, id)` for the members of cluster `cid` of rank
    /// `from` on (all: `None`) in rank order until it returns `false`.
    pub fn for_each_member(
        &self,
        cid: u64,
        from: Option<Rank>,
        visit: impl FnMut(Rank, &str) -> Result<bool>,
    ) -> Result<()> {
        self.for_each_member_opt(cid, from, ReadOptions::default(), visit)
    }

    fn for_each_member_opt(
        &self,
        cid: u64,
        from: Option<Rank>,
        ro: ReadOptions,
        mut visit: impl FnMut(Rank, &str) -> Result<bool>,
    ) -> Result<()> {
        let prefix = schema::members_prefix(cid);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(CLUSTERS), ro);
        match from {
            Some(rank) => it.seek(schema::member_key(cid, rank)),
            None => it.seek(prefix),
        }
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if !k.starts_with(&prefix) {
                break;
            }
            let (_, rank) =
                schema::decode_member_key(&k[1..]).map_err(|r| Error::corrupt(CLUSTERS, k, r))?;
            let id = std::str::from_utf8(v)
                .map_err(|_| Error::corrupt(CLUSTERS, k, "member id is not UTF-8"))?;
            if !visit(rank, id)? {
                break;
            }
            it.next();
        }
        it.status()?;
        Ok(())
    }

    /// Calls `visit(cid, size)` for every cluster of two or more documents,
    /// in cluster id order.
    pub fn for_each_cluster(&self, visit: impl FnMut(u64, u64) -> Result<()>) -> Result<()> {
        self.for_each_cluster_opt(ReadOptions::default(), visit)
    }

    /// [`Store::for_each_cluster`] at snapshot `at`.
    pub(crate) fn for_each_cluster_at(
        &self,
        at: &Snapshot<'_>,
        visit: impl FnMut(u64, u64) -> Result<()>,
    ) -> Result<()> {
        self.for_each_cluster_opt(read_at(at), visit)
    }

    fn for_each_cluster_opt(
        &self,
        mut ro: ReadOptions,
        mut visit: impl FnMut(u64, u64) -> Result<()>,
    ) -> Result<()> {
        ro.set_iterate_lower_bound(b"s".to_vec());
        ro.set_iterate_upper_bound(b"t".to_vec());
        let it = self.db.iterator_cf_opt(
            self.cf(CLUSTERS),
            ro,
            IteratorMode::From(b"s", Direction::Forward),
        );
        for item in it {
            let (k, v) = item?;
            let cid = schema::decode_u64(&k[1..]).map_err(|r| Error::corrupt(CLUSTERS, &k, r))?;
            let size = schema::decode_u64(&v).map_err(|r| Error::corrupt(CLUSTERS, &k, r))?;
            visit(cid, size)?;
        }
        Ok(())
    }

    /// Adds a raw `clusters` write to `b` (`None` deletes the key).
    pub fn put_cluster_raw(&self, b: &mut Batch, key: &[u8], value: Option<&[u8]>) {
        match value {
            Some(v) => b.0.put_cf(self.cf(CLUSTERS), key, v),
            None => b.0.delete_cf(self.cf(CLUSTERS), key),
        }
    }

    /// The clusters being re-checked against a new representative (`a`
    /// entries), in cluster id order, at most `n` of them.
    pub fn stale_clusters(&self, n: usize) -> Result<Vec<(u64, schema::Stale)>> {
        let mut ro = ReadOptions::default();
        ro.set_iterate_upper_bound(b"b".to_vec());
        let mut it = self.db.raw_iterator_cf_opt(self.cf(CLUSTERS), ro);
        it.seek(b"a");
        let mut out = Vec::new();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if out.len() >= n {
                break;
            }
            out.push(schema::decode_stale(&k[1..], v).map_err(|r| Error::corrupt(CLUSTERS, k, r))?);
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// The `a` entry of cluster `cid`, if it has one.
    pub fn stale_cluster(&self, cid: u64) -> Result<Option<schema::Stale>> {
        let k = schema::stale_key(cid);
        self.db
            .get_pinned_cf(self.cf(CLUSTERS), k)?
            .map(|v| {
                schema::decode_stale(&k[1..], &v)
                    .map(|(_, s)| s)
                    .map_err(|r| Error::corrupt(CLUSTERS, &k, r))
            })
            .transpose()
    }

    /// Adds the removal of every cluster entry (`a`, `d`, `m`, `s`; not
    /// the ingest order) to `b`.
    pub fn clear_clusters(&self, b: &mut Batch) {
        for (from, to) in [(b"a", b"b"), (b"d", b"e"), (b"m", b"n"), (b"s", b"t")] {
            b.0.delete_range_cf(self.cf(CLUSTERS), &from[..], &to[..]);
        }
    }

    /// Adds the removal of the ingest order index (`o` entries) and of
    /// the time index (`t` entries) to `b`.
    pub fn clear_order(&self, b: &mut Batch) {
        b.0.delete_range_cf(self.cf(CLUSTERS), &b"o"[..], &b"p"[..]);
        b.0.delete_range_cf(self.cf(CLUSTERS), &b"t"[..], &b"u"[..]);
    }

    /// Adds document `id`'s entry in the time index (`t` ‖ time ‖ ord) to
    /// `b`.
    pub fn put_time(&self, b: &mut Batch, time: u64, ord: u64, id: &str) {
        let (k, v) = schema::time_entry(time, ord, id);
        b.0.put_cf(self.cf(CLUSTERS), k, v);
    }

    /// Adds the removal of a time index entry to `b`.
    pub fn delete_time(&self, b: &mut Batch, time: u64, ord: u64) {
        b.0.delete_cf(self.cf(CLUSTERS), schema::time_key(time, ord));
    }

    /// Calls `visit(time, ord, id)` for the documents with their own time,
    /// oldest first, from (time, ord) `from` on, until it returns `false`.
    pub fn for_each_dated(
        &self,
        from: (u64, u64),
        mut visit: impl FnMut(u64, u64, &str) -> Result<bool>,
    ) -> Result<()> {
        let mut ro = ReadOptions::default();
        ro.set_iterate_upper_bound(b"u".to_vec());
        let mut it = self.db.raw_iterator_cf_opt(self.cf(CLUSTERS), ro);
        it.seek(schema::time_key(from.0, from.1));
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            let (time, ord) =
                schema::decode_time_key(&k[1..]).map_err(|r| Error::corrupt(CLUSTERS, k, r))?;
            let id = std::str::from_utf8(v)
                .map_err(|_| Error::corrupt(CLUSTERS, k, "document id is not UTF-8"))?;
            if !visit(time, ord, id)? {
                break;
            }
            it.next();
        }
        it.status()?;
        Ok(())
    }

    /// The latest time in the time index, if any document has its own.
    pub fn latest_dated(&self) -> Result<Option<u64>> {
        let mut ro = ReadOptions::default();
        ro.set_iterate_lower_bound(b"t".to_vec());
        let mut it = self.db.raw_iterator_cf_opt(self.cf(CLUSTERS), ro);
        it.seek_for_prev(b"u");
        let out = match it.key() {
            Some(k) if k.first() == Some(&b't') => Some(
                schema::decode_time_key(&k[1..])
                    .map_err(|r| Error::corrupt(CLUSTERS, k, r))?
                    .0,
            ),
            _ => None,
        };
        it.status()?;
        Ok(out)
    }

    /// Calls `visit(ord, id)` for documents in ingest order, oldest first,
    /// from ord `from` on, until it returns `false`.
    pub fn for_each_in_order(
        &self,
        from: u64,
        mut visit: impl FnMut(u64, &str) -> Result<bool>,
    ) -> Result<()> {
        let mut ro = ReadOptions::default();
        ro.set_iterate_upper_bound(b"p".to_vec());
        let mut it = self.db.raw_iterator_cf_opt(self.cf(CLUSTERS), ro);
        it.seek(schema::order_key(from));
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            let ord = schema::decode_u64(&k[1..]).map_err(|r| Error::corrupt(CLUSTERS, k, r))?;
            let id = std::str::from_utf8(v)
                .map_err(|_| Error::corrupt(CLUSTERS, k, "document id is not UTF-8"))?;
            if !visit(ord, id)? {
                break;
            }
            it.next();
        }
        it.status()?;
        Ok(())
    }

    /// Calls `visit(ord, id)` at `at` for the documents of ord `from` and
    /// below (`None`: from the newest), newest first, until it returns
    /// `false`.
    pub(crate) fn for_each_in_order_rev_at(
        &self,
        at: &Snapshot<'_>,
        from: Option<u64>,
        visit: impl FnMut(u64, &str) -> Result<bool>,
    ) -> Result<()> {
        self.in_order_rev(read_at(at), from, visit)
    }

    /// The largest ord among the members of cluster `cid` at `at` (its
    /// newest member's), from its member keys alone; 0 without members.
    pub(crate) fn newest_member_at(&self, at: &Snapshot<'_>, cid: u64) -> Result<u64> {
        let mut newest = 0u64;
        self.for_each_member_opt(cid, None, read_at(at), |rank, _| {
            newest = newest.max(rank.ord);
            Ok(true)
        })?;
        Ok(newest)
    }

    /// Calls `visit(ord, id)` for documents in ingest order, newest first,
    /// until it returns `false`.
    pub fn for_each_in_order_rev(
        &self,
        visit: impl FnMut(u64, &str) -> Result<bool>,
    ) -> Result<()> {
        self.in_order_rev(ReadOptions::default(), None, visit)
    }

    /// The walk of the `o` keys read with `ro` from ord `from` (`None`:
    /// the newest) down.
    fn in_order_rev(
        &self,
        mut ro: ReadOptions,
        from: Option<u64>,
        mut visit: impl FnMut(u64, &str) -> Result<bool>,
    ) -> Result<()> {
        ro.set_iterate_lower_bound(b"o".to_vec());
        let mut it = self.db.raw_iterator_cf_opt(self.cf(CLUSTERS), ro);
        match from {
            Some(ord) => it.seek_for_prev(schema::order_key(ord)),
            None => it.seek_for_prev(b"p"),
        }
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if k.first() != Some(&b'o') {
                break;
            }
            let ord = schema::decode_u64(&k[1..]).map_err(|r| Error::corrupt(CLUSTERS, k, r))?;
            let id = std::str::from_utf8(v)
                .map_err(|_| Error::corrupt(CLUSTERS, k, "document id is not UTF-8"))?;
            if !visit(ord, id)? {
                break;
            }
            it.prev();
        }
        it.status()?;
        Ok(())
    }

    /// The ingest order's meta values: the next ord and the clock (both 0
    /// when absent).
    pub fn ord_state(&self) -> Result<(u64, u64)> {
        let read = |m: schema::MetaU64| -> Result<u64> {
            match self.db.get_cf(self.cf(META), m.key())? {
                None => Ok(0),
                Some(v) => m.decode(&v).map_err(|r| Error::corrupt(META, m.key(), r)),
            }
        };
        Ok((
            read(schema::MetaU64::NextOrd)?,
            read(schema::MetaU64::Clock)?,
        ))
    }

    /// Sets the ingest order's meta values in `b`.
    pub fn put_ord_state(&self, b: &mut Batch, next_ord: u64, clock: u64) {
        for (k, v) in [
            schema::MetaU64::NextOrd.entry(next_ord),
            schema::MetaU64::Clock.entry(clock),
        ] {
            b.0.put_cf(self.cf(META), k, v);
        }
    }

    /// Makes the clusters family if the store has none (stores before
    /// format 4, on migration).
    pub fn ensure_families(&mut self) -> Result<()> {
        for name in super::ALL_FAMILIES {
            if self.db.cf_handle(name).is_none() {
                let opts = super::family_options(name, &self._cache);
                self.db.create_cf(name, &opts)?;
            }
        }
        Ok(())
    }

    /// Gives every record written before format 4 (record version < 4) an
    /// ord: `ingested_at << 32 | n`, n its position in id order, so
    /// ord order is ingest-time order (ties by id) and every ord is unique.
    /// Sets the next ord and the clock above all of them. Returns the
    /// number of records rewritten and of records that do not decode.
    pub fn assign_ords(&self) -> Result<(u64, u64)> {
        let (mut next, mut clock) = self.ord_state()?;
        let (mut rewritten, mut unreadable, mut n) = (0u64, 0u64, 0u64);
        let mut batch = Batch::default();
        self.for_each_raw(DOCS, |k, v| {
            let Ok(mut rec) = codec::decode_record(v) else {
                unreadable += 1;
                return Ok(());
            };
            clock = clock.max(rec.ingested_at);
            // n counts every record, so a migration run again after an
            // interruption numbers the rest as the first run would have.
            let pos = n;
            n += 1;
            if v.first().is_some_and(|&version| version < 4) {
                rec.ord = (rec.ingested_at.min(u64::from(u32::MAX)) << 32) | (pos & 0xffff_ffff);
                batch.0.put_cf(self.cf(DOCS), k, codec::encode_record(&rec));
                rewritten += 1;
                if rewritten.is_multiple_of(50_000) {
                    self.write(std::mem::take(&mut batch), false)?;
                }
            }
            next = next.max(rec.ord + 1);
            Ok(())
        })?;
        self.put_ord_state(&mut batch, next, clock);
        self.write(batch, true)?;
        Ok((rewritten, unreadable))
    }

    /// Format 13's ranks in a store made before: each `m` key and `a`
    /// entry whose rank key is below [`schema::KEPT_KEYS`] (under `first`,
    /// every one) moves to [`Rank::migrated`]. Kept documents (none before
    /// format 13) take the keys below. Run again after an interruption, it
    /// moves what is left. Returns the member keys moved.
    pub fn migrate_ranks(&self) -> Result<u64> {
        let mut moved = 0u64;
        let mut batch = Batch::default();
        let mut ro = ReadOptions::default();
        ro.fill_cache(false);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(CLUSTERS), ro);
        it.seek(b"a");
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            match k.first() {
                Some(b'a') => {
                    let (cid, st) = schema::decode_stale(&k[1..], v)
                        .map_err(|r| Error::corrupt(CLUSTERS, k, r))?;
                    if let Some(from) = st.from.migrated() {
                        let (k, v) = schema::stale_entry(cid, &schema::Stale { from, ..st });
                        batch.0.put_cf(self.cf(CLUSTERS), k, v);
                    }
                }
                Some(b'm') => {
                    let (cid, rank) = schema::decode_member_key(&k[1..])
                        .map_err(|r| Error::corrupt(CLUSTERS, k, r))?;
                    if let Some(to) = rank.migrated() {
                        batch.0.delete_cf(self.cf(CLUSTERS), k);
                        batch
                            .0
                            .put_cf(self.cf(CLUSTERS), schema::member_key(cid, to), v);
                        moved += 1;
                        if moved.is_multiple_of(100_000) {
                            self.write(std::mem::take(&mut batch), false)?;
                        }
                    }
                }
                Some(b'b'..=b'l') => {
                    // Between the `a` and `m` keys: `d` entries (one per
                    // member); go on at the `m` keys.
                    it.seek(b"m");
                    continue;
                }
                _ => break,
            }
            it.next();
        }
        it.status()?;
        self.write(batch, true)?;
        Ok(moved)
    }
}
