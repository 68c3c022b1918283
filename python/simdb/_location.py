"""Where an engine run keeps its work: a local path, or a URI of any file
system pyarrow opens (``s3://``, ``gs://``, ``hdfs://``, ``abfs://``,
``file://``), so that a cluster whose workers share no file system runs
the join with its work directory in an object store.

A :class:`Location` is a file system and a path on it; it pickles (the
file system with its options), so a task is given the location itself.
What a task writes there it writes whole or not at all: a local file
under a dot-name and then renamed, an object store's object by one
upload that either completes or leaves nothing. The library's Rust
functions read and write local files only; a task gives them local
copies (:meth:`Location.local_copy`) and uploads what they wrote
(:meth:`Location.upload`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from typing import Any, Iterator, Optional, Union


class Location:
    """A file or directory on a file system (see the module)."""

    __slots__ = ("fs", "path")

    def __init__(self, fs: Any, path: str) -> None:
        self.fs = fs
        self.path = path

    @classmethod
    def of(cls, where: Union[str, "os.PathLike[str]", "Location"]) -> "Location":
        """``where`` as a location: a URI with a scheme (its query may
        hold the file system's options, as pyarrow reads them, e.g.
        ``s3://bucket/work?endpoint_override=host:9000&scheme=http``), or
        a local path (made absolute)."""
        if isinstance(where, Location):
            return where
        import pyarrow.fs as pafs

        s = os.fspath(where)
        if "://" in s and not s.startswith("file://"):
            fs, path = pafs.FileSystem.from_uri(s)
            return cls(fs, path.rstrip("/"))
        if s.startswith("file://"):
            s = s[len("file://"):]
        return cls(pafs.LocalFileSystem(), os.path.abspath(s))

    @property
    def local(self) -> bool:
        """Whether this is a path of this machine's file system."""
        import pyarrow.fs as pafs

        return isinstance(self.fs, pafs.LocalFileSystem)

    def reader_fs(self) -> Any:
        """The file system to give a reader with this location's paths:
        None for a local one (so the reader takes its paths as they are;
        Ray Data refuses some with a local file system given), else this
        one."""
        return None if self.local else self.fs

    def join(self, *names: str) -> "Location":
        """The location ``names`` below this one."""
        if self.local:
            return Location(self.fs, os.path.join(self.path, *names))
        return Location(self.fs, "/".join([self.path, *names]))

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    def __str__(self) -> str:
        return self.path if self.local else f"{self.fs.type_name}://{self.path}"

    def __repr__(self) -> str:
        return f"Location({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Location) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))

    def _info(self) -> Any:
        return self.fs.get_file_info(self.path)

    def exists(self) -> bool:
        import pyarrow.fs as pafs

        return self._info().type != pafs.FileType.NotFound

    def is_dir(self) -> bool:
        import pyarrow.fs as pafs

        return self._info().type == pafs.FileType.Directory

    def makedirs(self) -> None:
        self.fs.create_dir(self.path, recursive=True)

    def rmtree(self) -> None:
        """This directory and all below it removed, if it is there."""
        if self.local:
            shutil.rmtree(self.path, ignore_errors=True)
        elif self.exists():
            self.fs.delete_dir(self.path)

    def names(self) -> list[str]:
        """The names of the files directly in this directory, sorted
        (none when it is not there)."""
        import pyarrow.fs as pafs

        sel = pafs.FileSelector(self.path, allow_not_found=True)
        return sorted(i.base_name for i in self.fs.get_file_info(sel) if i.type == pafs.FileType.File)

    def parquet_parts(self) -> list["Location"]:
        """The ``.parquet`` files of this directory that are parts (not a
        dot- or underscore-name), in name order."""
        return [self.join(n) for n in self.names() if n.endswith(".parquet") and not n.startswith((".", "_"))]

    def _whole(self, write: Any) -> None:
        """``write(path, fs)`` made whole or not at all: locally under a
        dot-name then renamed; on another file system one upload."""
        if self.local:
            d, base = os.path.split(self.path)
            os.makedirs(d, exist_ok=True)
            tmp = os.path.join(d, "." + base + ".tmp")
            write(tmp, self.fs)
            os.replace(tmp, self.path)
        else:
            write(self.path, self.fs)

    def write_table(self, table: Any) -> None:
        """``table`` as Parquet here, whole or not at all."""
        import pyarrow.parquet as pq

        self._whole(lambda p, fs: pq.write_table(table, p, filesystem=fs))

    def read_table(self, columns: Optional[list] = None) -> Any:
        import pyarrow.parquet as pq

        return pq.read_table(self.path, columns=columns, filesystem=self.fs)

    def num_rows(self) -> int:
        """The rows of the Parquet file here, from its footer."""
        with self.fs.open_input_file(self.path) as f:
            import pyarrow.parquet as pq

            return pq.ParquetFile(f).metadata.num_rows

    def write_bytes(self, data: bytes) -> None:
        def write(p: str, fs: Any) -> None:
            with fs.open_output_stream(p) as f:
                f.write(data)

        self._whole(write)

    def read_bytes(self) -> bytes:
        with self.fs.open_input_stream(self.path) as f:
            return f.read()

    def write_json(self, what: Any) -> None:
        self.write_bytes((json.dumps(what) + "\n").encode())

    def read_json(self) -> Any:
        return json.loads(self.read_bytes())

    def upload(self, local: str) -> None:
        """The local file ``local`` copied here, whole or not at all."""
        if self.local:
            self._whole(lambda p, _fs: shutil.copyfile(local, p))
            return
        import pyarrow.fs as pafs

        pafs.copy_files(local, self.path, destination_filesystem=self.fs)

    def download(self, local: str) -> None:
        """This file copied to the local path ``local``."""
        import pyarrow.fs as pafs

        if self.local:
            shutil.copyfile(self.path, local)
        else:
            pafs.copy_files(self.path, local, source_filesystem=self.fs)

    @contextlib.contextmanager
    def local_copy(self) -> Iterator[str]:
        """A local path of this file for the length of the block: the file
        itself when it is local, else a copy in a temporary directory."""
        if self.local:
            yield self.path
            return
        with tempfile.TemporaryDirectory(prefix="simdb-") as d:
            p = os.path.join(d, self.name)
            self.download(p)
            yield p
