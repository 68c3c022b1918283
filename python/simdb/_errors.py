"""The exceptions simdb raises. Each is a :class:`SimdbError`; some are also
the built-in exception a caller would expect (``InvalidInput`` is a
``ValueError``, ``NotFound`` a ``KeyError``, ``StorageError`` an ``OSError``)."""


class SimdbError(Exception):
    """Base class of every simdb error."""


class InvalidInput(SimdbError, ValueError):
    """The caller's input was wrong: a bad option, k out of range, a bad
    fingerprint."""


class NoFeatures(InvalidInput):
    """The text has nothing usable (empty, only punctuation or stop words)."""


class NotFound(SimdbError, KeyError):
    """No document with that id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class StoreInUse(SimdbError):
    """Another process (or another open Db in this one) holds the store for
    writing. Open it with ``read_only=True`` to read meanwhile."""


class StoreExists(SimdbError, FileExistsError):
    """``Db.create`` on a path that already exists."""


class NoSuchStore(SimdbError, FileNotFoundError):
    """``Db.open`` on a path with no store."""


class NotASimdbStore(SimdbError):
    """The path holds something that is not a simdb store."""


class IncompatibleStore(SimdbError):
    """The store was made by another format version or recipe, or a repair
    was interrupted: the message says what to run."""


class Corrupt(SimdbError):
    """Stored data failed a check (the message names family and key)."""


class StorageError(SimdbError, OSError):
    """The file system or RocksDB failed."""


class ClosedError(SimdbError):
    """The Db was closed."""


class ForkedError(SimdbError):
    """The Db was opened in another process (this is a child of fork()):
    open the store again in this process."""


__all__ = [
    "SimdbError",
    "InvalidInput",
    "NoFeatures",
    "NotFound",
    "StoreInUse",
    "StoreExists",
    "NoSuchStore",
    "NotASimdbStore",
    "IncompatibleStore",
    "Corrupt",
    "StorageError",
    "ClosedError",
    "ForkedError",
]
