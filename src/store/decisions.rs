//! The `decisions` family (format 12): "not a copy" pairs, looked up by
//! the placement rule, the "keep this one" documents (format 13), looked
//! up by the writer, and the decision log (layout in [`super::schema`]).

use std::sync::atomic::Ordering::Relaxed;

use rocksdb::ReadOptions;

use super::codec::{self, Decision};
use super::{schema, Batch, Store, DECISIONS};
use crate::error::{Error, Result};

impl Store {
    /// Notes whether the store has a "not a copy" pair and a kept
    /// document (at open).
    pub(super) fn note_decisions(&self) -> Result<()> {
        let any = |tag: u8| -> Result<bool> {
            let mut it = self.db.raw_iterator_cf(self.cf(DECISIONS));
            it.seek([tag]);
            let any = it.key().is_some_and(|k| k.first() == Some(&tag));
            it.status()?;
            Ok(any)
        };
        self.has_vetoes.store(any(b'n')?, Relaxed);
        self.has_keeps.store(any(b'k')?, Relaxed);
        Ok(())
    }

    /// The log sequence of the standing "keep this one" decision on `id`,
    /// if there is one (without any, nothing is read).
    pub fn kept(&self, id: &str) -> Result<Option<u64>> {
        if !self.has_keeps.load(Relaxed) {
            return Ok(None);
        }
        let k = schema::keep_key(id);
        match self.db.get_pinned_cf(self.cf(DECISIONS), &k)? {
            None => Ok(None),
            Some(v) => schema::decode_u64(&v)
                .map(Some)
                .map_err(|r| Error::corrupt(DECISIONS, &k, r)),
        }
    }

    /// Adds "keep `id`", decided by log entry `seq`, to `batch`.
    pub fn put_keep(&self, batch: &mut Batch, id: &str, seq: u64) {
        batch
            .0
            .put_cf(self.cf(DECISIONS), schema::keep_key(id), seq.to_be_bytes());
        self.has_keeps.store(true, Relaxed);
    }

    /// Adds the removal of "keep `id`" to `batch`.
    pub fn delete_keep(&self, batch: &mut Batch, id: &str) {
        batch.0.delete_cf(self.cf(DECISIONS), schema::keep_key(id));
    }

    /// Calls `visit(id, seq)` with every kept document, in id order.
    pub fn for_each_keep(&self, mut visit: impl FnMut(&str, u64) -> Result<()>) -> Result<()> {
        self.for_each_tagged(b'k', |k, seq| {
            let id = schema::decode_keep_key(k).map_err(|r| Error::corrupt(DECISIONS, k, r))?;
            visit(&id, seq)
        })
    }

    /// Calls `visit(key, seq)` with every key of `decisions` that begins
    /// with `tag` and holds a sequence (`k`, `n`), in key order.
    fn for_each_tagged(
        &self,
        tag: u8,
        mut visit: impl FnMut(&[u8], u64) -> Result<()>,
    ) -> Result<()> {
        let mut ro = ReadOptions::default();
        ro.fill_cache(false);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(DECISIONS), ro);
        it.seek([tag]);
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if k.first() != Some(&tag) {
                break;
            }
            let seq = schema::decode_u64(v).map_err(|r| Error::corrupt(DECISIONS, k, r))?;
            visit(k, seq)?;
            it.next();
        }
        it.status()?;
        Ok(())
    }

    /// Whether the store has a "not a copy" pair (or had one since its
    /// open): without one, [`Store::vetoed`] reads nothing.
    pub fn has_vetoes(&self) -> bool {
        self.has_vetoes.load(Relaxed)
    }

    /// The log sequence of the "not a copy" decision on (`a`, `b`), if one
    /// stands.
    pub fn veto(&self, a: &str, b: &str) -> Result<Option<u64>> {
        if !self.has_vetoes() {
            return Ok(None);
        }
        let k = schema::veto_key(a, b);
        match self.db.get_pinned_cf(self.cf(DECISIONS), &k)? {
            None => Ok(None),
            Some(v) => schema::decode_u64(&v)
                .map(Some)
                .map_err(|r| Error::corrupt(DECISIONS, &k, r)),
        }
    }

    /// Whether `a` and `b` were decided not to be copies of each other.
    pub fn vetoed(&self, a: &str, b: &str) -> Result<bool> {
        Ok(self.veto(a, b)?.is_some())
    }

    /// The documents `a` was decided not to be a copy of, in id order.
    pub fn vetoed_with(&self, a: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        if !self.has_vetoes() {
            return Ok(out);
        }
        let prefix = schema::veto_prefix(a);
        let mut it = self.db.raw_iterator_cf(self.cf(DECISIONS));
        it.seek(&prefix);
        while let Some(k) = it.key() {
            if !k.starts_with(&prefix) {
                break;
            }
            let (_, b) = schema::decode_veto_key(k).map_err(|r| Error::corrupt(DECISIONS, k, r))?;
            out.push(b);
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// Adds the "not a copy" pair (`a`, `b`), decided by log entry `seq`,
    /// to `batch`: a key for each order.
    pub fn put_veto(&self, batch: &mut Batch, a: &str, b: &str, seq: u64) {
        for (x, y) in [(a, b), (b, a)] {
            batch.0.put_cf(
                self.cf(DECISIONS),
                schema::veto_key(x, y),
                seq.to_be_bytes(),
            );
        }
        self.has_vetoes.store(true, Relaxed);
    }

    /// Adds the removal of the pair (`a`, `b`) to `batch`.
    pub fn delete_veto(&self, batch: &mut Batch, a: &str, b: &str) {
        for (x, y) in [(a, b), (b, a)] {
            batch
                .0
                .delete_cf(self.cf(DECISIONS), schema::veto_key(x, y));
        }
    }

    /// Adds log entry `d` to `batch`.
    pub fn put_decision(&self, batch: &mut Batch, d: &Decision) {
        batch.0.put_cf(
            self.cf(DECISIONS),
            schema::decision_log_key(d.seq),
            codec::encode_decision(d),
        );
    }

    /// The sequence of the last log entry (0: none).
    pub fn last_decision_seq(&self) -> Result<u64> {
        let mut it = self.db.raw_iterator_cf(self.cf(DECISIONS));
        it.seek_for_prev(schema::decision_log_key(u64::MAX));
        let last = match it.key() {
            Some(k) if k.first() == Some(&b'l') => {
                schema::decode_u64(&k[1..]).map_err(|r| Error::corrupt(DECISIONS, k, r))?
            }
            _ => 0,
        };
        it.status()?;
        Ok(last)
    }

    /// Log entry `seq`, if there is one.
    pub fn decision(&self, seq: u64) -> Result<Option<Decision>> {
        let k = schema::decision_log_key(seq);
        match self.db.get_pinned_cf(self.cf(DECISIONS), k)? {
            None => Ok(None),
            Some(v) => codec::decode_decision(&v)
                .map(Some)
                .map_err(|r| Error::corrupt(DECISIONS, &k, r)),
        }
    }

    /// Calls `visit` with each log entry after sequence `after`, oldest
    /// first, until it returns `false`.
    pub fn for_each_decision(
        &self,
        after: u64,
        mut visit: impl FnMut(Decision) -> Result<bool>,
    ) -> Result<()> {
        let mut ro = ReadOptions::default();
        ro.fill_cache(false);
        let mut it = self.db.raw_iterator_cf_opt(self.cf(DECISIONS), ro);
        it.seek(schema::decision_log_key(after.saturating_add(1)));
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if k.first() != Some(&b'l') || after == u64::MAX {
                break;
            }
            let d = codec::decode_decision(v).map_err(|r| Error::corrupt(DECISIONS, k, r))?;
            if !visit(d)? {
                break;
            }
            it.next();
        }
        it.status()?;
        Ok(())
    }

    /// Calls `visit(a, b, seq)` with every "not a copy" key (each pair
    /// twice, once in each order), in key order.
    pub fn for_each_veto(
        &self,
        mut visit: impl FnMut(&str, &str, u64) -> Result<()>,
    ) -> Result<()> {
        self.for_each_tagged(b'n', |k, seq| {
            let (a, b) = schema::decode_veto_key(k).map_err(|r| Error::corrupt(DECISIONS, k, r))?;
            visit(&a, &b, seq)
        })
    }
}
