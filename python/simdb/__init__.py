"""simdb: a persistent, on-disk near-duplicate index for text.

Each document becomes a 64-bit Simhash fingerprint (jieba segmentation for
Chinese, words for Latin scripts, TF-IDF weights); two documents are
near-duplicates when their fingerprints differ in at most k bits (k = 3 by
default, with confidence-ranked probing beyond it and a character-4-gram
sketch that confirms each candidate). The store is RocksDB on disk: it
survives restarts and grows night after night.

>>> import simdb, tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "news.db")
>>> with simdb.Db.create(path) as db:
...     r = db.add("a", "国务院总理今天在北京主持召开国务院常务会议，研究部署稳就业促消费的政策措施。")
...     r = db.add("b", "国务院总理今天在北京主持召开国务院常务会议，研究部署稳就业促消费的政策。")
...     [h.id for h in db.query("国务院总理今天在北京主持召开国务院常务会议，研究部署稳就业促消费的政策措施")]
['a', 'b']
"""

from . import _errors
from ._errors import *  # noqa: F403 (the exception classes, as _errors.__all__ lists them)
from ._simdb import (
    AddResult,
    Analyzer,
    Db,
    Hit,
    JoinChecker,
    __version__,
    distance,
    document_times,
    engine_records,
    export_part,
    finish_export,
    fingerprint,
    fingerprints,
    import_parquet,
    index_entries,
    key_matches,
    page,
    pair_verdicts,
    place_components,
    place_groups,
    put_clusters,
    rebuild_clusters,
    rule,
)

__all__ = [
    "Db",
    "Hit",
    "AddResult",
    "Analyzer",
    "JoinChecker",
    "engine_records",
    "document_times",
    "export_part",
    "finish_export",
    "index_entries",
    "key_matches",
    "fingerprint",
    "fingerprints",
    "distance",
    "import_parquet",
    "page",
    "pair_verdicts",
    "place_components",
    "place_groups",
    "put_clusters",
    "rebuild_clusters",
    "rule",
    "__version__",
    *_errors.__all__,
]
