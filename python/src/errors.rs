//! The library's errors as the exceptions of `simdb._errors`.

use super::*;

// ---------------------------------------------------------------- errors

/// The class of `simdb._errors` that `e` is raised as.
pub(super) fn error_class(e: &Error) -> &'static str {
    match e {
        Error::NoFeatures => "NoFeatures",
        Error::UnsupportedDistance { .. } | Error::Input(_) => "InvalidInput",
        Error::NotFound { .. } => "NotFound",
        Error::Corrupt { .. } => "Corrupt",
        Error::NotASimdbStore { .. } => "NotASimdbStore",
        Error::NewerFormat { .. }
        | Error::OlderFormat { .. }
        | Error::NeedsMigration { .. }
        | Error::RepairInProgress { .. }
        | Error::ClustersIncomplete { .. }
        | Error::RecipeMismatch { .. } => "IncompatibleStore",
        Error::InUse { .. } => "StoreInUse",
        Error::AlreadyExists { .. } => "StoreExists",
        Error::NoSuchStore { .. } => "NoSuchStore",
        _ => "StorageError",
    }
}

/// The message of `e` with its causes, as the CLI prints it.
pub(super) fn message(e: &Error) -> String {
    let mut s = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let c_s = c.to_string();
        if !s.contains(&c_s) {
            s.push_str(": ");
            s.push_str(&c_s);
        }
        cause = c.source();
    }
    s
}

pub(super) fn raise(py: Python<'_>, class: &str, msg: String) -> PyErr {
    static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let module = ERRORS.get_or_try_init(py, || py.import("simdb._errors").map(Bound::unbind));
    match module.and_then(|m| m.bind(py).getattr(class)) {
        Ok(cls) => PyErr::from_type(cls.cast_into().expect("an exception class"), msg),
        Err(e) => e,
    }
}

pub(super) fn py_err(e: Error) -> PyErr {
    Python::attach(|py| raise(py, error_class(&e), message(&e)))
}

pub(super) trait OrRaise<T> {
    fn or_raise(self) -> PyResult<T>;
}

impl<T> OrRaise<T> for simdb::Result<T> {
    fn or_raise(self) -> PyResult<T> {
        self.map_err(py_err)
    }
}
