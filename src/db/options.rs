//! How a store is opened or created: [`Db::options`], the one door in.
//!
//! ```no_run
//! # fn main() -> simdb::Result<()> {
//! use simdb::{Db, Recipe, Tuning};
//! let db = Db::options().create("new.db", Recipe::default())?;
//! drop(db);
//! let reader = Db::options().read_only().open("new.db")?;
//! let big = Db::options()
//!     .tuning(Tuning { block_cache_bytes: 1 << 30, ..Tuning::default() })
//!     .open("new.db")?;
//! # drop((reader, big)); Ok(()) }
//! ```

use std::path::Path;

use super::{Db, KeepPolicy};
use crate::error::{Error, Result};
use crate::fingerprint::{self, Fingerprinter, Recipe};
use crate::store::{self, Access, Store, Tuning};

/// What [`DbOptions::open`] and [`DbOptions::create`] do, set one by one
/// from [`Db::options`]: for writing with the default [`Tuning`] unless
/// told otherwise. An option that means nothing for the call it reaches
/// (a learned IDF table or a keep policy for `open`, an expected recipe
/// or read-only access for `create`) is refused, not ignored.
#[derive(Debug, Clone)]
#[must_use = "options do nothing until open or create"]
pub struct DbOptions {
    access: Access,
    tuning: Tuning,
    parallel_queries: bool,
    for_repair: bool,
    expecting: Option<Recipe>,
    learned_idf: Option<fingerprint::LearnedIdf>,
    keep: Option<KeepPolicy>,
    keep_texts: bool,
}

impl Default for DbOptions {
    fn default() -> DbOptions {
        DbOptions {
            access: Access::ReadWrite,
            tuning: Tuning::default(),
            parallel_queries: true,
            for_repair: false,
            expecting: None,
            learned_idf: None,
            keep: None,
            keep_texts: false,
        }
    }
}

impl Db {
    /// The builder that opens and creates stores ([`DbOptions`]).
    pub fn options() -> DbOptions {
        DbOptions::default()
    }
}

impl DbOptions {
    /// Opens for reading: works while another process writes to the store
    /// and sees it as it was when opened.
    pub fn read_only(self) -> DbOptions {
        self.access(Access::ReadOnly)
    }

    /// Opens with `access` (the default is [`Access::ReadWrite`]: one
    /// writer at a time, refused with [`Error::InUse`] while another
    /// process holds the store).
    pub fn access(mut self, access: Access) -> DbOptions {
        self.access = access;
        self
    }

    /// Memory and I/O knobs ([`Tuning`]).
    pub fn tuning(mut self, tuning: Tuning) -> DbOptions {
        self.tuning = tuning;
        self
    }

    /// Whether a query with many buckets reads half of its families on
    /// rayon's pool meanwhile (the default: lower latency for one caller).
    /// A service answering many queries at once turns it off: each query
    /// then stays on its thread, with no wake-up of another.
    pub fn parallel_queries(mut self, on: bool) -> DbOptions {
        self.parallel_queries = on;
        self
    }

    /// Opens for writing even if an earlier repair was interrupted (which
    /// other opens refuse), to run [`super::Maintenance::repair`].
    pub fn for_repair(mut self) -> DbOptions {
        self.for_repair = true;
        self
    }

    /// Opens only a store whose recipe is `recipe` (a
    /// [`Error::RecipeMismatch`] names the first field that differs).
    pub fn expecting(mut self, recipe: &Recipe) -> DbOptions {
        self.expecting = Some(recipe.clone());
        self
    }

    /// Creates the store with an IDF learned from the user's own corpus
    /// ([`fingerprint::LearnedIdf::learn`]); the table is kept in the store
    /// and named in its recipe.
    pub fn learned_idf(mut self, table: fingerprint::LearnedIdf) -> DbOptions {
        self.learned_idf = Some(table);
        self
    }

    /// Creates the store with keep policy `keep` (who represents a
    /// cluster; the default is [`KeepPolicy::default`]). An existing
    /// store's policy is changed with
    /// [`super::Maintenance::set_keep_policy`].
    pub fn keep(mut self, keep: KeepPolicy) -> DbOptions {
        self.keep = Some(keep);
        self
    }

    /// Creates a store that keeps the text of every document written
    /// with one (a web page's: the text extracted from it), for review
    /// ([`Db::document`]'s `text`, the service's diffs). It costs the texts' size
    /// (LZ4-compressed) on disk; a store made without it keeps none, and
    /// the choice is made once, at creation.
    pub fn keep_texts(mut self) -> DbOptions {
        self.keep_texts = true;
        self
    }

    /// Opens the store at `path`.
    pub fn open(self, path: impl AsRef<Path>) -> Result<Db> {
        let path = path.as_ref();
        if self.learned_idf.is_some() || self.keep.is_some() || self.keep_texts {
            return Err(Error::Input(
                "a learned IDF table, a keep policy or keeping texts is chosen when a store is \
                 created; an existing store's keep policy is changed with set_keep_policy"
                    .into(),
            ));
        }
        if self.for_repair && self.access == Access::ReadOnly {
            return Err(Error::Input(
                "a repair needs the store open for writing".into(),
            ));
        }
        let (store, recipe) = if self.for_repair {
            Store::open_for_repair(path)?
        } else {
            Store::open(path, self.access, self.tuning)?
        };
        let mut db = Db::with_store(path, store, recipe)?;
        db.store.parallel_probe = self.parallel_queries;
        if let Some(expected) = &self.expecting {
            if let Some((field, stored, requested)) = db.recipe().difference(expected) {
                return Err(Error::RecipeMismatch {
                    path: path.to_path_buf(),
                    field: field.to_string(),
                    stored,
                    requested,
                });
            }
        }
        Ok(db)
    }

    /// Creates a store at `path` (which must not hold one) with `recipe`,
    /// open for writing.
    pub fn create(self, path: impl AsRef<Path>, recipe: Recipe) -> Result<Db> {
        let path = path.as_ref();
        if self.access == Access::ReadOnly || self.for_repair || self.expecting.is_some() {
            return Err(Error::Input(
                "a store is created open for writing, with the recipe it is given".into(),
            ));
        }
        let mut extra: Vec<(&[u8], &[u8])> = Vec::new();
        if self.keep_texts {
            extra.push((store::KEEP_TEXTS_KEY, b"1"));
        }
        let (store, fingerprinter) = match self.learned_idf {
            Some(table) => {
                let recipe = recipe.with_learned_idf(&table);
                recipe.validate()?;
                let fingerprinter = Fingerprinter::with_learned_idf(recipe.clone(), table)?;
                let idf = fingerprinter
                    .learned_idf()
                    .map(|t| t.as_str().as_bytes().to_vec())
                    .unwrap_or_default();
                // The recipe names the table: both go in one batch.
                extra.push((store::IDF_TABLE_KEY, &idf));
                let store = Store::create_with_meta(path, &recipe, self.tuning, &extra)?;
                (store, fingerprinter)
            }
            None => {
                recipe.validate()?;
                if recipe.uses_learned_idf() {
                    return Err(Error::Input(
                        "the recipe names a learned IDF table: give the table with \
                         Db::options().learned_idf(..)"
                            .into(),
                    ));
                }
                let store = Store::create_with_meta(path, &recipe, self.tuning, &extra)?;
                (store, Fingerprinter::new(recipe))
            }
        };
        let mut db = Db::new(store, fingerprinter);
        db.store.parallel_probe = self.parallel_queries;
        if let Some(keep) = self.keep {
            // An empty store: no cluster to rebuild, the policy is written.
            db.maintenance().set_keep_policy(keep)?;
        }
        Ok(db)
    }
}
