"""Type stubs of the native module (re-exported by ``simdb``)."""

from os import PathLike
from typing import Any, Iterable, Iterator, Literal, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

Outcome = Literal["inserted", "replaced", "unchanged", "duplicate", "no_features"]
DocInput = Union[Tuple[str, str], Mapping[str, Any]]

class Hit:
    """A stored near-duplicate.

    >>> hits = db.query("…")           # doctest: +SKIP
    >>> hits[0].id, hits[0].distance, hits[0].similarity   # doctest: +SKIP
    ('a', 0, 1.0)
    """

    @property
    def id(self) -> str: ...
    @property
    def fingerprint(self) -> int:
        """The stored document's 64-bit fingerprint (0 <= f < 2**64)."""
    @property
    def distance(self) -> int:
        """Hamming distance from the query's fingerprint."""
    @property
    def similarity(self) -> Optional[float]:
        """Estimated Jaccard similarity of the two texts' character 4-grams
        (from their sketches); None when one side has no sketch (a
        fingerprint query, or a document stored as a fingerprint)."""
    @property
    def containment(self) -> Optional[float]:
        """Set when the similarity is below the threshold and the hit was
        confirmed because the shorter text is contained in the longer (a
        truncated copy): the estimated share of it inside."""

class AddResult:
    """What a write did with one document."""

    @property
    def id(self) -> str: ...
    @property
    def outcome(self) -> Outcome:
        """``inserted``, ``replaced`` (the id had other content),
        ``unchanged`` (same id, same content: nothing written),
        ``duplicate`` (not written: it has near-duplicates and
        ``skip_duplicates`` was set) or ``no_features`` (nothing usable in
        the text: not written)."""
    @property
    def fingerprint(self) -> Optional[int]: ...
    @property
    def duplicates(self) -> list[Hit]:
        """Its near-duplicates among stored documents and those written
        before it, nearest first: the first ``max_duplicates`` (default
        10) of them."""
    @property
    def duplicate_count(self) -> int:
        """How many near-duplicates the check confirmed: exact when
        :attr:`duplicate_count_exact`, else a lower bound (the check stops
        after 16, or ``max_duplicates`` if more, or 256 candidates looked
        at, so a write costs the same whatever the store holds)."""
    @property
    def duplicate_count_exact(self) -> bool: ...
    @property
    def short(self) -> bool:
        """Fewer than 10 terms: the fingerprint says less."""
    @property
    def page(self) -> Optional[Literal["article", "visible_text"]]:
        """For a web page (``html``), how its text was found: its main
        content (``article``), or no article was found and its visible text
        was used (``visible_text``); None for a text."""

class Db:
    """An open simdb store: a directory on disk.

    One process at a time may open a store for writing (a second gets
    :class:`simdb.StoreInUse`); any number may open it ``read_only=True``,
    also while it is written. One ``Db`` may be used from several threads:
    calls release the GIL, queries run in parallel, writes are serialised.

    >>> import simdb, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "s.db")
    >>> with simdb.Db.create(path) as db:
    ...     _ = db.add("1", "the quick brown fox jumps over the lazy dog again and again")
    ...     [h.id for h in db.query("the quick brown fox jumps over the lazy dog again and again!")]
    ['1']
    """

    @staticmethod
    def create(
        path: Union[str, PathLike[str]],
        *,
        top_k: int = 0,
        shingle: int = 1,
        hmm: bool = False,
        tf: Literal["raw", "log"] = "raw",
        keep_stop_words: bool = False,
        latin: str = "char-3-grams",
        script: Literal["t2s", "none"] = "t2s",
        keep: Literal["first", "priority", "longest", "newest"] = "first",
        keep_texts: bool = False,
    ) -> Db:
        """Creates a new, empty store at ``path`` with this fingerprint
        recipe (the defaults are the measured best; see the README) and
        keep policy (who represents a cluster: the ``first`` ingested, the
        highest ``priority``, the ``longest`` text or the ``newest``).
        With ``keep_texts`` the store keeps every text written, and
        :meth:`get` returns it as ``"text"`` (chosen once, here).
        Raises :class:`simdb.StoreExists` if ``path`` exists."""
    @staticmethod
    def open(path: Union[str, PathLike[str]], *, read_only: bool = False) -> Db:
        """Opens a store. For writing, only one process at a time
        (:class:`simdb.StoreInUse`); ``read_only=True`` sees the store as
        it was at open, and works while another process writes (it holds
        every table file of that view open, one descriptor each)."""
    def close(self, *, wait: bool = True) -> None:
        """Flushes and closes; new calls raise :class:`simdb.ClosedError`.
        With ``wait`` (the default), first waits for the calls running in
        other threads to end, so the store is closed and unlocked when this
        returns; with ``wait=False``, returns at once and the store closes
        when the last of them ends. A Db used in a child of ``fork()``
        raises :class:`simdb.ForkedError`: open the store in each process."""
    def __enter__(self) -> Db: ...
    def __exit__(self, *exc: object) -> bool: ...
    @property
    def closed(self) -> bool: ...
    @property
    def path(self) -> str: ...
    @property
    def read_only(self) -> bool: ...
    @property
    def recipe(self) -> dict[str, Any]:
        """The store's fingerprint recipe."""
    @property
    def keep_policy(self) -> str:
        """The store's keep policy: ``first``, ``priority``, ``longest`` or
        ``newest``."""
    def add(
        self,
        id: str,
        text: Optional[str] = None,
        *,
        html: Optional[Union[str, bytes]] = None,
        charset: Optional[str] = None,
        time: Optional[Union[int, str]] = None,
        k: Optional[int] = None,
        min_similarity: Optional[float] = None,
        probe_budget: Optional[int] = None,
        skip_duplicates: bool = False,
        sync: bool = False,
        max_duplicates: Optional[int] = None,
    ) -> AddResult:
        """Adds (or replaces) one document and returns its near-duplicates
        (the first ``max_duplicates``, default 10, at most 100, and how
        many there are).

        The write is atomic and in RocksDB's write-ahead log when this
        returns; ``sync=True`` also fsyncs it. ``k``/``probe_budget``/
        ``min_similarity`` set the duplicate check as for :meth:`query`.

        A web page is given as ``html`` instead of ``text``: a ``str``, or
        ``bytes`` as fetched (the charset by the WHATWG rules, ``charset``
        first, as an HTTP header's). What is fingerprinted is its title and
        main content (see :func:`page`), as ``simdb ingest --format html``
        extracts them; a store records that extraction and refuses pages
        from a build that extracts otherwise.

        ``time`` is the document's own time (Unix seconds, or an RFC 3339
        ``str`` such as a crawl's fetch date): ``expire`` and the
        ``newest`` keep policy go by it instead of the time written.
        """
    def add_many(
        self,
        docs: Iterable[DocInput],
        *,
        batch_size: int = 1000,
        k: Optional[int] = None,
        min_similarity: Optional[float] = None,
        probe_budget: Optional[int] = None,
        skip_duplicates: bool = False,
        sync: bool = False,
        results: bool = True,
        max_duplicates: Optional[int] = None,
    ) -> Union[list[AddResult], dict[str, Any]]:
        """Adds documents from any iterable of ``(id, text)`` pairs or dicts
        (``{"id", "text"}``, ``{"id", "html"}`` with an optional
        ``"charset"`` for bytes (see :meth:`add`), or ``{"id",
        "fingerprint"}``; an optional ``"time"`` (see :meth:`add`) and an optional
        ``"priority"`` ranks cluster representatives in a store whose keep
        policy is ``"priority"``).

        The iterable is read ``batch_size`` documents at a time; each batch
        is fingerprinted in parallel with the GIL released and written as
        one atomic batch (a later document sees the earlier ones of its
        batch as duplicates). A bad item raises ``TypeError`` before its
        batch is written; the batches before it stay written.

        Returns one :class:`AddResult` per document (each listing at most
        ``max_duplicates`` near-duplicates, default 10), or with
        ``results=False`` only the counts (memory stays bounded however long
        the input): per outcome (``inserted``, ``replaced``, ``unchanged``,
        ``duplicate``, ``no_features``), then ``near_duplicates`` (documents
        with one) and ``short`` (short documents written), and with web
        pages ``pages`` (a dict: ``article``, ``visible_text``), the names
        of the CLI's summary and the service's answer.

        >>> db.add_many(({"id": r.id, "text": r.text} for r in df.itertuples()))  # doctest: +SKIP
        """
    def query(
        self,
        q: Union[str, int],
        *,
        k: Optional[int] = None,
        min_similarity: Optional[float] = None,
        limit: Optional[int] = None,
        probe_budget: Optional[int] = None,
    ) -> list[Hit]:
        """Stored near-duplicates of a text (``str``) or a fingerprint
        (``int``), nearest first: at most ``limit`` (default 10, at most
        10,000; more raises :class:`simdb.InvalidInput`).

        Without ``k``: k = 3 plus confidence-ranked probing of 112 buckets and the 16 band buckets of the sketch
        (the default, best recall); with ``k`` (0..11): exactly every
        document within k bits, as a brute-force scan would find.
        ``min_similarity`` (0..1) is the sketch similarity a candidate needs
        (text queries only; default: the store's threshold).
        """
    def similar(
        self,
        id: str,
        *,
        k: Optional[int] = None,
        min_similarity: Optional[float] = None,
        limit: Optional[int] = None,
        probe_budget: Optional[int] = None,
    ) -> list[Hit]:
        """Near-duplicates of the stored document ``id`` (itself left out).
        Raises :class:`simdb.NotFound` if it is not stored."""
    def query_many(
        self,
        queries: Iterable[Union[str, int]],
        *,
        k: Optional[int] = None,
        min_similarity: Optional[float] = None,
        limit: Optional[int] = None,
        probe_budget: Optional[int] = None,
    ) -> list[list[Hit]]:
        """:meth:`query` for many queries at once: texts analysed in
        parallel, one pass over the index for all."""
    def get(self, id: str) -> Optional[dict[str, Any]]:
        """The stored record of ``id`` (fingerprint, content hash, length,
        ingested_at, top terms, cluster, …), or None."""
    def delete(self, id: str, *, sync: bool = False) -> bool:
        """Deletes ``id``; whether it was stored."""
    def __len__(self) -> int: ...
    def __contains__(self, id: str) -> bool: ...
    def stats(self) -> dict[str, Any]:
        """As ``simdb stats --json``: counts, bucket sizes, bytes on disk,
        recipe, the frozen index."""
    def freeze(self) -> dict[str, Any]:
        """Writes the frozen index again, as ``simdb freeze``: every bucket
        read in place until a write changes it. Writes and queries go on
        meanwhile. Returns generation, entries, bytes, path, seconds."""
    def cluster(self, id: str) -> Optional[dict[str, Any]]:
        """The cluster of near-duplicates ``id`` belongs to: id,
        representative, size, members (with distances), max_distance."""
    def clusters(
        self, *, min_size: int = 2, max_members: int = 1000
    ) -> Iterator[dict[str, Any]]:
        """The clusters of at least ``min_size`` documents, in id order, read
        256 at a time; each lists its first ``max_members`` members in rank
        order (``size`` counts them all)."""
    def clusters_page(
        self,
        *,
        sort: str = "size",
        after: Optional[str] = None,
        limit: int = 20,
        min_size: int = 2,
        members: int = 5,
        source: Optional[str] = None,
    ) -> dict[str, Any]:
        """A page of clusters as ``GET /clusters`` answers: ``clusters``
        (largest first; ``sort="newest"``: by newest member, latest
        first; ``"distant"``: by most distant member, farthest first;
        ``"id"``: oldest first; each with its first
        ``members`` members and its representative's ``source``) and
        ``next``, the cursor to pass as ``after`` (``None`` at the end).
        ``source`` keeps the clusters whose representative's source begins
        with it (an input file's name)."""
    def cluster_members(
        self, id: str, *, after: Optional[str] = None, limit: int = 100
    ) -> Optional[dict[str, Any]]:
        """The cluster of ``id`` a page at a time, as ``GET /cluster``
        answers: ``representative``, ``members`` (each with ``why``:
        ``distance``, ``similarity``, ``containment``, ``confirmed_by``) and
        ``next``; ``None`` if ``id`` is not stored."""
    def not_a_copy(self, a: str, b: str, *, who: str = "python", sync: bool = False) -> int:
        """Decides that stored documents ``a`` and ``b`` are not copies of
        each other: neither is ever placed in a cluster the other
        represents (writes, re-checks, rebuilds); when one represents the
        other's cluster now, the other leaves it. Returns the decision's
        log sequence; ``who`` goes in the log."""
    def keep(self, id: str, *, who: str = "python", sync: bool = False) -> int:
        """Decides that stored document ``id`` is the one to keep: it
        represents its cluster from now on (before every member not kept;
        among kept documents, the latest decision first), through writes,
        re-checks and rebuilds; the members are re-checked against it.
        Returns the decision's log sequence; ``who`` goes in the log."""
    def undo_decision(self, seq: int, *, who: str = "python", sync: bool = False) -> int:
        """Undoes decision ``seq``: a "not a copy" (nothing rejoins at
        once; a rebuild may place the pair together) or a "keep" (the
        document ranks by the keep policy again). Returns the undo's
        sequence."""
    def replay_decisions(self, log: Union[str, PathLike[str]], *, sync: bool = False) -> list[int]:
        """Writes the decisions of a log file (``simdb decisions --json``,
        an export's ``_decisions.jsonl``) into this store, in order, whether
        or not their documents are stored here (a document written later
        obeys them). Returns each entry's sequence here."""
    def decisions(self, *, after: int = 0, limit: int = 100) -> dict[str, Any]:
        """A page of the decision log, as ``GET /decisions`` answers:
        ``decisions`` (``seq``, ``kind``, ``a``, ``b``, ``who``, ``at``,
        ``undoes``), oldest first, and ``next``."""
    def earlier_copies(self, start: int, end: int) -> dict[str, Any]:
        """Each document whose ord is in ``start..end`` that has confirmed
        near-copies among the documents before it (the duplicate check a
        cluster rebuild, and ingest, makes): equal-length lists ``ord``,
        ``id``, and per document its hits nearest first, ``near`` (ids),
        ``distance``, ``similarity``, ``containment``; and ``checked``, the
        documents checked. Reads only: processes that each open the store
        read-only can split its ords (``simdb.ray.dedup``)."""
    def records(self, ids: list[str]) -> dict[str, list[Any]]:
        """The stored records of ``ids`` for the engines' placement
        (``place_components``): lists ``ord`` and ``record`` (bytes, as the
        store's codec writes a record: docs/format.md), None where an id
        is not stored."""

def import_parquet(
    target: Union[str, PathLike[str]],
    inputs: list[Union[str, PathLike[str]]],
    *,
    recipe: Optional[Union[dict[str, Any], str]] = None,
    freeze: bool = True,
    partial: bool = False,
    memory_bytes: Optional[int] = None,
) -> dict[str, Any]:
    """``simdb import`` of Parquet (an engine's fingerprint rows, or a
    ``simdb export``) into a new store at ``target``, made whole or not at
    all; ``recipe``: the one the fingerprints were made with. Returns the
    import's summary (records, documents, no_fingerprint, …)."""

def rebuild_clusters(
    path: Union[str, PathLike[str]],
    lists: Iterable[tuple[int, list[str]]],
    *,
    keep: Optional[str] = None,
) -> int:
    """Rebuilds the clusters of the store at ``path`` (no other handle may
    hold it) from near-copy lists, ``(ord, [ids])`` in ascending ord as
    ``Db.earlier_copies`` gives them, under ``keep`` (default: the
    store's policy). Returns the number of clusters of two or more."""

def place_components(
    scratch: Union[str, PathLike[str]],
    ids: list[str],
    records: list[bytes],
    list_ords: list[int],
    lists: list[list[str]],
    *,
    recipe: Optional[Union[dict[str, Any], str]] = None,
    keep: Optional[str] = None,
    decisions: Optional[Union[str, PathLike[str]]] = None,
    written_at: Optional[int] = None,
) -> dict[str, list[Any]]:
    """The clusters of whole components of the near-copy graph, placed by
    the store's rule in a scratch store made at ``scratch`` (a new path,
    removed afterwards): ``ids`` with their ``records`` (``Db.records``'
    bytes), and the near-copy lists (``list_ords``, ``lists``) of those
    that have any; every id a list names must be among ``ids``.
    ``recipe`` is the run's store's, ``keep`` the policy (default
    ``first``), ``decisions`` a log of ``simdb decisions --json``,
    ``written_at`` the time every record is taken as written at (the run's
    store's, when it was made by one import). Returns the cluster rows as lists: ``cluster``, ``size``,
    ``representative``, ``id``, ``rank``, ``distance``."""

def pair_verdicts(
    a_sketch: list[Optional[bytes]],
    a_fine: list[Optional[bytes]],
    a_length: list[Optional[int]],
    b_sketch: list[Optional[bytes]],
    b_fine: list[Optional[bytes]],
    b_length: list[Optional[int]],
    *,
    min_similarity: Optional[float] = None,
    recipe: Optional[Union[dict[str, Any], str]] = None,
) -> dict[str, Any]:
    """How the store's rule decides each pair ``a[i]``, ``b[i]`` (sketch
    bytes, fine sketch bytes, content length; None where a document has
    none) at ``min_similarity`` (default: the threshold a store of
    ``recipe`` confirms at): lists ``similarity`` (None without two
    sketches), ``refined``, ``confirmed`` and ``containment`` (set when
    containment confirmed the pair), and ``min_similarity`` (the threshold
    used). An exact-k join (``tools/spark/simdb_spark.py``) confirms its
    pairs with it and writes no rule of its own."""

def place_groups(
    scratch: Union[str, PathLike[str]],
    ids: list[str],
    ords: list[int],
    fingerprints: list[int],
    sketches: list[Optional[bytes]],
    fines: list[Optional[bytes]],
    lengths: list[Optional[int]],
    priorities: list[Optional[float]],
    dated: list[Optional[int]],
    ingested_at: list[Optional[int]],
    groups: list[int],
    pair_x: list[int],
    pair_y: list[int],
    *,
    k: int,
    min_similarity: Optional[float] = None,
    recipe: Optional[Union[dict[str, Any], str]] = None,
    keep: Optional[str] = None,
    decisions: Optional[Union[str, PathLike[str]]] = None,
) -> dict[str, list[Any]]:
    """The clusters of whole components given as groups of copies (the
    documents column by column, ``fingerprints`` as signed 64-bit ints, as
    an export's ``fingerprint`` column holds them; ``groups`` names each
    document's group: one fingerprint, sketch, fine sketch and length) and
    the pairs of groups within ``k`` bits (``pair_x[i]``, ``pair_y[i]``),
    placed as a store ingested with ``-k K`` places them: each document's
    16 nearest confirmed earlier copies, then the store's placement under
    ``keep``, obeying the decision log ``decisions``, in a scratch store at
    ``scratch`` (a new path; removed when done). Returns the columns of
    :func:`place_components`."""

def put_clusters(
    path: Union[str, PathLike[str]],
    chunks: Iterable[tuple[list[int], list[int], list[str]]],
    *,
    keep: Optional[str] = None,
) -> int:
    """Replaces the clusters of the store at ``path`` (no other handle may
    hold it) by placed ones: ``(clusters, ranks, ids)`` chunks, each
    cluster's rows together and in rank order, as ``place_components``
    gives them, under ``keep`` (default: the store's policy). Rows that
    disagree with the store's records are refused. Returns the number of
    clusters."""

def export_part(
    out: Union[str, PathLike[str]],
    number: int,
    ids: list[str],
    records: list[bytes],
    clusters: list[Optional[int]],
    *,
    recipe: Optional[Union[dict[str, Any], str]] = None,
    keep: Optional[str] = None,
    written_at: Optional[int] = None,
) -> dict[str, Any]:
    """Part ``number`` (``part-NNNNN.parquet``) of the export an engine's
    run is, written into the directory ``out`` by the library's export
    writer (whole or absent): the documents ``ids`` with their
    ``records`` (record bytes), each a member of cluster ``clusters[i]``
    (None: alone), stating ``recipe`` and ``keep`` (default first);
    ``written_at`` is the write time every record is taken at. Returns
    its manifest entry (``file``, ``bytes``, ``rows``, ``crc32``)."""

def finish_export(
    out: Union[str, PathLike[str]],
    parts: list[dict[str, Any]],
    *,
    decisions: Optional[Union[str, PathLike[str]]] = None,
) -> dict[str, Any]:
    """Ends the export in ``out`` whose ``parts`` :func:`export_part`
    wrote: the decision log ``decisions`` copied in, then ``_SUCCESS``
    with the manifest (returned), so that ``simdb import`` restores the
    store the run stands for."""

def fingerprint(
    text: str,
    *,
    top_k: int = 0,
    shingle: int = 1,
    hmm: bool = False,
    tf: Literal["raw", "log"] = "raw",
    keep_stop_words: bool = False,
    latin: str = "char-3-grams",
    script: Literal["t2s", "none"] = "t2s",
) -> int:
    """The 64-bit Simhash fingerprint of ``text`` under a recipe (the
    defaults are a new store's). Raises :class:`simdb.NoFeatures` for a text
    with nothing usable.

    >>> import simdb
    >>> simdb.distance(simdb.fingerprint("北京欢迎你"), simdb.fingerprint("北京欢迎你"))
    0
    """

def fingerprints(
    texts: Iterable[str],
    *,
    fill: Optional[int] = None,
    top_k: int = 0,
    shingle: int = 1,
    hmm: bool = False,
    tf: Literal["raw", "log"] = "raw",
    keep_stop_words: bool = False,
    latin: str = "char-3-grams",
    script: Literal["t2s", "none"] = "t2s",
) -> npt.NDArray[np.uint64]:
    """Fingerprints of many texts (in parallel, GIL released) as a numpy
    ``uint64`` array. A text with nothing usable raises
    :class:`simdb.NoFeatures` naming its index, unless ``fill`` gives the
    value to put in its place."""

class Analyzer:
    """A recipe's text analysis, made once and used for many batches (the
    state of a Ray or Spark worker): what a store keeps of each text.

    With ``db``, the recipe (and learned IDF) of that store, so an engine's
    fingerprints match the store they will meet; otherwise the recipe of
    the keywords (a new store's by default)."""

    def __init__(
        self,
        *,
        db: Optional[Union[str, PathLike[str]]] = None,
        recipe: Optional[Union[str, dict[str, Any]]] = None,
        top_k: int = 0,
        shingle: int = 1,
        hmm: bool = False,
        tf: str = "raw",
        keep_stop_words: bool = False,
        latin: str = "char-3-grams",
        script: str = "t2s",
    ) -> None: ...
    @property
    def recipe(self) -> dict[str, Any]:
        """The recipe, as ``Db.recipe`` gives a store's."""
    @property
    def rule(self) -> int:
        """The digest of the rule the analysis is made for (see
        :func:`rule`): ``simdb.ray.fingerprint`` stamps it on each row."""
    def analyze_many(
        self, texts: Iterable[Optional[Union[str, bytes]]], *, html: bool = False
    ) -> dict[str, list[Any]]:
        """Analyses ``texts`` in parallel (the GIL released): a dict of
        equal-length lists ``fingerprint`` (int, or None where a text has
        no usable features or is None), ``sketch`` (32 bytes, or None),
        ``length`` (UTF-8 bytes), ``terms``, ``weak_bits`` (bytes),
        ``content_hash`` (int, or None with the fingerprint), ``parts``
        (bytes: the part hashes a store keeps, u64 big-endian each, or
        None with the sketch) and ``fine`` (96 bytes: the fine sketch, or
        None with the sketch) -- the values
        ``simdb ingest`` stores for the same texts, which ``simdb import``
        keeps.

        With ``html=True`` each item is a web page (``str``, or ``bytes``
        as fetched) and what is analysed is the text extracted from it
        (see :func:`page`); ``length`` and ``content_hash`` are that
        text's."""

def page(html: Union[str, bytes], *, charset: Optional[str] = None) -> dict[str, str]:
    """What a web page becomes in a store (as ``simdb ingest --format
    html`` and ``Db.add(id, html=...)`` read it): ``title``, ``body`` (the
    main content, or the visible text when no article is found), ``text``
    (what is fingerprinted: the title, a line break, the body), ``found``
    (``article`` or ``visible_text``) and ``encoding`` (what the page was
    read in). ``html`` is a ``str``, or ``bytes`` as fetched, the charset
    by the WHATWG rules (``charset``, as an HTTP header's, first).
    Query with a page by its text: ``db.query(simdb.page(html)["text"])``."""

def rule(recipe: Optional[Union[dict[str, Any], str]] = None) -> dict[str, Any]:
    """The rule a store's answers follow: ``recipe`` (a dict as
    ``Db.recipe`` gives it, or its JSON; default: a new store's) with this
    build's constants, as a dict of ``version``, ``recipe``, ``constants``
    (the check's bounds, the band and probe plans, the confirmation
    thresholds, ...) and ``digest`` (an int: the u64 the engines' rows
    carry in their ``rule`` column and an export states as
    ``simdb.rule_digest``, 16 hex digits). A run refuses rows stamped
    with another digest."""

def distance(a: int, b: int) -> int:
    """Hamming distance of two fingerprints."""

def engine_records(
    ords: list[int],
    fingerprints: list[int],
    sketches: list[Optional[bytes]],
    fines: list[Optional[bytes]],
    lengths: list[Optional[int]],
    weak_bits: list[Optional[bytes]],
    parts: list[Optional[bytes]],
    priorities: list[Optional[float]],
    dated: list[Optional[int]],
    *,
    content_hashes: Optional[list[Optional[int]]] = None,
    terms: Optional[list[Optional[int]]] = None,
) -> list[bytes]:
    """The records (the store's codec bytes) of an engine's fingerprint
    rows (the columns :func:`simdb.ray.fingerprint` writes; ``parts``:
    u64 big-endian each; ``content_hashes`` and ``terms`` where given) at
    ``ords``, with what the rows state (``priority``, ``dated``: Unix
    seconds)."""

def document_times(values: list[Any]) -> list[Optional[int]]:
    """Documents' own times (Unix seconds, RFC 3339 strings or None) as
    Unix seconds, by the rule ``simdb ingest`` applies to a ``"time"``;
    ``ValueError`` names the first bad row."""

def index_entries(ids: list[str], records: list[bytes]) -> dict[str, npt.NDArray[Any]]:
    """Stage 1 of the check as a join: the index entries of the documents
    given (each fingerprint's documents all of them): numpy arrays
    ``family``, ``value``, ``fingerprint`` (signed), ``after``, ``until``."""

def key_matches(
    family: npt.NDArray[np.uint8],
    value: npt.NDArray[np.uint64],
    fingerprint: npt.NDArray[np.int64],
    after: npt.NDArray[np.uint64],
    until: npt.NDArray[np.uint64],
    probe_family: npt.NDArray[np.uint8],
    probe_value: npt.NDArray[np.uint64],
    probe_ord: npt.NDArray[np.uint64],
    probe_q: npt.NDArray[np.int64],
    probe_k: npt.NDArray[np.uint32],
    probe_outside: npt.NDArray[np.int64],
    probe_ranked: npt.NDArray[np.bool_],
) -> dict[str, npt.NDArray[Any]]:
    """Stage 2, for the keys of one share (each key's entries and probes
    all of them), over numpy arrays of the columns' types: arrays
    ``matched_ord``, ``matched_fingerprint`` and ``boilerplate_ord``,
    ``boilerplate_part``. Raises ``ValueError`` if the entries give one
    fingerprint twice in a bucket over overlapping ords (stage 1 never
    does)."""

def range_map(
    parts: list[Union[str, PathLike[str]]],
    *,
    decisions: Optional[Union[str, PathLike[str]]] = None,
    samples: int = 0,
) -> tuple[bytes, list[bytes], dict[str, int]]:
    """Step 1 of a store built by key range (``simdb::import::ranges``),
    on a worker: the items of a share of an export's part files under the
    decision log in file ``decisions``, as an Arrow IPC stream (columns
    ``tag``, ``group``, ``key``, ``value``); a sample of ``samples`` of
    their range keys; the share's counts."""

def range_boundaries(samples: list[bytes], ranges: int) -> list[bytes]:
    """The boundaries of ``ranges`` ranges from every share's samples."""

def range_split(items: bytes, boundaries: list[bytes]) -> list[bytes]:
    """A share's items (an Arrow IPC stream) cut by ``boundaries``: one
    stream per range, ``len(boundaries) + 1`` of them."""

def range_reduce(
    streams: list[bytes],
    dir: Union[str, PathLike[str]],
    name: str,
    *,
    samples: int = 0,
    file_bytes: int = 256 << 20,
) -> dict[str, Any]:
    """Steps 2 and 3, on a worker: the table files of one range's items
    (every item of each of their groups) under ``dir``, named from
    ``name``: a dict with ``files`` (``[family, [paths]]``), ``items``
    (the next round's, one stream), ``sample`` and ``counts``."""

def range_assemble(
    target: Union[str, PathLike[str]],
    export: Union[str, PathLike[str]],
    files: list[tuple[str, list[str]]],
    counts: list[dict[str, int]],
    *,
    freeze: bool = True,
    checked: bool = False,
) -> dict[str, int]:
    """Step 4, where the store is to be: the store at ``target`` (a new
    path) from the export in directory ``export`` and every range's table
    files (moved in), with the counts of every share and range; with
    ``freeze``, then its frozen index (as ``simdb freeze``, on this
    machine). With ``checked``, the parts in ``export`` are taken as they
    are (the maps checked each against the manifest; ``export`` may hold
    one part, for the metadata), else each is checked here. Returns the
    summed counts."""

class JoinChecker:
    """The store's duplicate check on a worker, with no store of the run
    (stages 2 to 4 of the check as a join; :func:`simdb.engine.check_by_join`
    runs them all in one process). ``scratch``: a new path for an empty
    scratch store, removed when the checker goes; ``recipe``: the run's."""

    def __init__(
        self,
        scratch: Union[str, PathLike[str]],
        *,
        recipe: Optional[Union[dict[str, Any], str]] = None,
    ) -> None: ...
    def probes(self, ids: list[str], records: list[bytes]) -> dict[str, npt.NDArray[Any]]:
        """Each key the documents' checks read, with its rule: numpy arrays
        ``family``, ``value``, ``ord``, ``q``, ``k``, ``outside``, ``ranked``."""
    def fingerprint_docs(
        self,
        ids: list[str],
        records: list[bytes],
        probe_ids: list[str],
        probe_records: list[bytes],
        probe_fingerprints: list[int],
    ) -> dict[str, list[Any]]:
        """Stage 3: for each probe, the earlier documents of the
        fingerprint it matched that its check can look at: lists ``ord``
        (the probe's), ``id``, ``record``."""
    def check(
        self,
        ids: list[str],
        records: list[bytes],
        sent_ord: list[int],
        sent_ids: list[str],
        sent_records: list[bytes],
        boilerplate_ord: list[int],
        boilerplate_part: list[int],
    ) -> dict[str, Any]:
        """Stage 4: the checks of ``ids`` over what stage 3 sent them:
        the columns of ``Db.earlier_copies``, each near copy's
        ``near_ord`` and ``near_record``, and ``checked``."""
