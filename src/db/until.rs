//! When a handle's long work stops ([`super::Admin::until`],
//! [`super::Clusters::until`]): a question asked between its steps.

use crate::{Error, Result};

/// Whether long work goes on: asked between its steps; once it answers
/// false, the work ends with [`Error::Interrupted`]. Without one, it
/// always goes on.
#[derive(Clone, Copy, Default)]
pub(crate) struct GoOn<'a>(Option<&'a (dyn Fn() -> bool + Sync)>);

impl<'a> GoOn<'a> {
    pub(crate) fn new(go_on: &'a (dyn Fn() -> bool + Sync)) -> GoOn<'a> {
        GoOn(Some(go_on))
    }

    /// `Err(Error::Interrupted)` once the caller asked to stop.
    pub(crate) fn check(&self) -> Result<()> {
        match self.0 {
            Some(f) if !f() => Err(Error::Interrupted),
            _ => Ok(()),
        }
    }
}
